"""The jargon dictionary: terms, per-chat counts, evidence references, review trail.

Revision ID: 0004_jargon
Revises: 0002_chat_history
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_jargon"
down_revision: str | Sequence[str] | None = "0002_chat_history"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "jargon",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=True),
        sa.Column("content", sa.String(256), nullable=False),
        sa.Column("normalized", sa.String(256), nullable=False),
        sa.Column("meaning", sa.Text, nullable=False),
        sa.Column("is_jargon", sa.Boolean, nullable=True),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("last_inference_count", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("provenance", sa.String(16), nullable=False),
        sa.Column("decided_by", sa.String(128), nullable=True),
        sa.Column("decided_at", sa.Float, nullable=True),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index(
        "uq_jargon_scope_normalized",
        "jargon",
        [sa.text("coalesce(chat_id, 0)"), "normalized"],
        unique=True,
    )
    op.create_index("ix_jargon_status_count", "jargon", ["status", "count"])
    op.create_table(
        "jargon_chat_counts",
        sa.Column("jargon_id", sa.Integer, sa.ForeignKey("jargon.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("count", sa.Integer, nullable=False),
    )
    op.create_table(
        "jargon_evidence",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("jargon_id", sa.Integer, sa.ForeignKey("jargon.id", ondelete="CASCADE"), nullable=False),
        sa.Column("message_id", sa.Integer, sa.ForeignKey("messages.id", ondelete="CASCADE"), nullable=False),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.UniqueConstraint("jargon_id", "message_id", name="uq_jargon_evidence_jargon_id"),
    )
    op.create_index("ix_jargon_evidence_chat", "jargon_evidence", ["jargon_id", "chat_id"])
    op.create_table(
        "jargon_reviews",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("jargon_id", sa.Integer, nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("old", sa.JSON, nullable=False),
        sa.Column("new", sa.JSON, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
    )
    op.create_index("ix_jargon_reviews_jargon_id", "jargon_reviews", ["jargon_id"])


def downgrade() -> None:
    op.drop_table("jargon_reviews")
    op.drop_table("jargon_evidence")
    op.drop_table("jargon_chat_counts")
    op.drop_table("jargon")
