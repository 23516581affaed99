"""ChatHistory rows remember the source messages the summary model last answered unusably for, so an
offline row is asked about again only once its messages change (memory.history.redigest).

Revision ID: 0017_history_digest_tried
Revises: 0016_clean_stored_names
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_history_digest_tried"
down_revision: str | Sequence[str] | None = "0016_clean_stored_names"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_history") as batch:
        batch.add_column(sa.Column("digest_tried", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_history") as batch:
        batch.drop_column("digest_tried")
