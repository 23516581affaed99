"""Chats merged into another leave their platform key behind, pointing at the chat they went into, so
that an import of the old chat's export (or a late message) lands there and does not make it again.

Revision ID: 0012_chat_redirects
Revises: 0011_deleted_messages
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_chat_redirects"
down_revision: str | Sequence[str] | None = "0011_deleted_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chat_redirects",
        sa.Column("platform", sa.String(32), primary_key=True),
        sa.Column("platform_chat_id", sa.String(128), primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("prefix", sa.String(512), nullable=False),
        sa.Column("time", sa.Float, nullable=False),
    )
    op.create_index("ix_chat_redirects_chat_id", "chat_redirects", ["chat_id"])


def downgrade() -> None:
    op.drop_index("ix_chat_redirects_chat_id", "chat_redirects")
    op.drop_table("chat_redirects")
