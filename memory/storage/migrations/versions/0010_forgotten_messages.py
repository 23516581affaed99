"""Remember up to when a person's messages were deleted on request, so that importing the same history
again does not bring them back. Existing requests that deleted messages did so up to their time.

Revision ID: 0010_forgotten_messages
Revises: 0009_qq_private_chats
Depends on: 0003_persons
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_forgotten_messages"
down_revision: str | Sequence[str] | None = "0009_qq_private_chats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = "0003_persons"  # person_forgotten is made there


def upgrade() -> None:
    with op.batch_alter_table("person_forgotten") as batch:
        batch.add_column(sa.Column("messages_removed_until", sa.Float, nullable=True))
    op.execute("UPDATE person_forgotten SET messages_removed_until = time WHERE removed_messages > 0")


def downgrade() -> None:
    with op.batch_alter_table("person_forgotten") as batch:
        batch.drop_column("messages_removed_until")
