"""Messages their platform said were deleted, so that an import or a late delivery does not bring them
back.

Revision ID: 0011_deleted_messages
Revises: 0010_forgotten_messages
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_deleted_messages"
down_revision: str | Sequence[str] | None = "0010_forgotten_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "deleted_messages",
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("platform_message_id", sa.String(128), primary_key=True),
        sa.Column("time", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("deleted_messages")
