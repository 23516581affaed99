"""Topic cache extras: the topic's weighted terms (for reusing topics offline) and its message time span.

Revision ID: 0003_history_extras
Revises: 0002_chat_history
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_history_extras"
down_revision: str | Sequence[str] | None = "0002_chat_history"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("topic_cache") as batch:
        batch.add_column(sa.Column("terms", sa.JSON, nullable=False, server_default="{}"))
        batch.add_column(sa.Column("first_time", sa.Float, nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_time", sa.Float, nullable=False, server_default="0"))
        batch.add_column(sa.Column("provenance", sa.String(16), nullable=False, server_default="offline"))


def downgrade() -> None:
    with op.batch_alter_table("topic_cache") as batch:
        batch.drop_column("provenance")
        batch.drop_column("last_time")
        batch.drop_column("first_time")
        batch.drop_column("terms")
