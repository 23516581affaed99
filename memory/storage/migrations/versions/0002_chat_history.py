"""Mid-term memory: topic cache, chat history with FTS, forgetting log.

Revision ID: 0002_chat_history
Revises: 0001_foundation
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_chat_history"
down_revision: str | Sequence[str] | None = "0001_foundation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "topic_cache",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("title", sa.String(256), nullable=False),
        sa.Column("thread_keys", sa.JSON, nullable=False),
        sa.Column("message_ids", sa.JSON, nullable=False),
        sa.Column("fragment_count", sa.Integer, nullable=False),
        sa.Column("participants", sa.JSON, nullable=False),
        sa.Column("no_update_checks", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_topic_cache_chat", "topic_cache", ["chat_id"])
    op.create_table(
        "chat_history",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("theme", sa.String(256), nullable=False),
        sa.Column("keywords", sa.JSON, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("key_points", sa.JSON, nullable=False),
        sa.Column("original_text", sa.Text, nullable=False),
        sa.Column("participants", sa.JSON, nullable=False),
        sa.Column("start_time", sa.Float, nullable=False),
        sa.Column("end_time", sa.Float, nullable=False),
        sa.Column("source_message_ids", sa.JSON, nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("forget_times", sa.Integer, nullable=False),
        sa.Column("provenance", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_chat_history_chat_end", "chat_history", ["chat_id", "end_time"])
    op.create_index("ix_chat_history_forget", "chat_history", ["forget_times", "end_time"])
    op.execute(
        "CREATE VIRTUAL TABLE chat_history_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0')"
    )
    op.create_table(
        "forget_log",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_history_id", sa.Integer, nullable=False),
        sa.Column("chat_id", sa.Integer, nullable=False),
        sa.Column("theme", sa.String(256), nullable=False),
        sa.Column("stage", sa.Integer, nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("forget_log")
    op.execute("DROP TABLE chat_history_fts")
    op.drop_table("chat_history")
    op.drop_table("topic_cache")
