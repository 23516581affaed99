"""Accounts merged into another person, so later messages from them reach that person.

Revision ID: 0007_person_accounts
Revises: 0006_turn_windows
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_person_accounts"
down_revision: str | Sequence[str] | None = "0006_turn_windows"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "person_accounts",
        sa.Column("platform", sa.String(32), primary_key=True),
        sa.Column("platform_user_id", sa.String(128), primary_key=True),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("persons.id", ondelete="CASCADE"), nullable=False),
        sa.Column("merged_at", sa.Float, nullable=False),
    )
    op.create_index("ix_person_accounts_person_id", "person_accounts", ["person_id"])


def downgrade() -> None:
    op.drop_index("ix_person_accounts_person_id", "person_accounts")
    op.drop_table("person_accounts")
