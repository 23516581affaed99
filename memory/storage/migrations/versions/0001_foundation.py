"""Foundation: chats, persons, chat members, messages with FTS, LLM usage, job state.

Revision ID: 0001_foundation
Revises:
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001_foundation"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chats",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("platform_chat_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("platform", "platform_chat_id", name="uq_chats_platform"),
    )
    op.create_table(
        "persons",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("platform_user_id", sa.String(128), nullable=False),
        sa.Column("nickname", sa.String(256), nullable=False),
        sa.Column("person_name", sa.String(256), nullable=True),
        sa.Column("is_bot", sa.Boolean, nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.UniqueConstraint("platform", "platform_user_id", name="uq_persons_platform"),
    )
    op.create_table(
        "chat_members",
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("persons.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("card", sa.String(256), nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
        sa.Column("message_count", sa.Integer, nullable=False),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("platform_message_id", sa.String(128), nullable=False),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("persons.id", ondelete="SET NULL"), nullable=True),
        sa.Column("sender_name", sa.String(256), nullable=False),
        sa.Column("sender_card", sa.String(256), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("segments", sa.JSON, nullable=False),
        sa.Column("reply_to", sa.String(128), nullable=True),
        sa.Column("mentions", sa.JSON, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("utc_offset_minutes", sa.Integer, nullable=False),
        sa.Column("is_bot", sa.Boolean, nullable=False),
        sa.Column("to_bot", sa.Boolean, nullable=False),
        sa.UniqueConstraint("chat_id", "platform_message_id", name="uq_messages_chat_id"),
    )
    op.create_index("ix_messages_chat_time", "messages", ["chat_id", "time"])
    op.create_index("ix_messages_person", "messages", ["person_id"])
    op.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0')"
    )
    op.create_table(
        "llm_usage",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task", sa.String(32), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        sa.Column("ok", sa.Boolean, nullable=False),
        sa.Column("error", sa.String(512), nullable=False),
        sa.Column("time", sa.Float, nullable=False),
    )
    op.create_index("ix_llm_usage_task_time", "llm_usage", ["task", "time"])
    op.create_table(
        "job_state",
        sa.Column("job", sa.String(64), primary_key=True),
        sa.Column("chat_id", sa.Integer, primary_key=True),
        sa.Column("cursor", sa.Integer, nullable=False),
        sa.Column("last_run", sa.Float, nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_state")
    op.drop_table("llm_usage")
    op.execute("DROP TABLE messages_fts")
    op.drop_table("messages")
    op.drop_table("chat_members")
    op.drop_table("persons")
    op.drop_table("chats")
