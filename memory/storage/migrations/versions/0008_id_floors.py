"""The highest id ever used in tables whose rows can be deleted, so that ids are never reused.

Revision ID: 0008_id_floors
Revises: 0007_person_accounts
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_id_floors"
down_revision: str | Sequence[str] | None = "0007_person_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "id_floors",
        sa.Column("name", sa.String(32), primary_key=True),
        sa.Column("value", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("id_floors")
