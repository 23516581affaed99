"""Recall: embedding vectors (per row and model) and synthetic preference documents with FTS.

Revision ID: 0003_embeddings
Revises: 0002_chat_history
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_embeddings"
down_revision: str | Sequence[str] | None = "0002_chat_history"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "embeddings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("ref_id", sa.Integer, nullable=False),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("dimension", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("kind", "ref_id", "model", name="uq_embeddings_kind_ref_model"),
    )
    op.create_index("ix_embeddings_chat_model", "embeddings", ["chat_id", "model"])
    op.create_table(
        "preference_docs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("message_id", sa.Integer, sa.ForeignKey("messages.id", ondelete="CASCADE"), nullable=False),
        sa.Column("person_id", sa.Integer, nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
    )
    op.create_index("ix_preference_docs_chat", "preference_docs", ["chat_id"])
    op.create_index("ix_preference_docs_message", "preference_docs", ["message_id"])
    op.execute(
        "CREATE VIRTUAL TABLE preference_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0')"
    )


def downgrade() -> None:
    op.execute("DROP TABLE preference_fts")
    op.drop_table("preference_docs")
    op.drop_table("embeddings")
