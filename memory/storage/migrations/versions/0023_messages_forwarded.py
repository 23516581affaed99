"""Messages remember that they were forwards (`messages.forwarded`, `ChatMessage.forwarded`): a stored
forward re-shares words written elsewhere, so the jobs that read a person's words later (consolidation,
relearn) leave it out as the live path does. Rows stored before this revision were not told apart and
read 0 (not a forward).

A plain `ALTER TABLE … ADD COLUMN` with a constant default: SQLite only rewrites the table's schema, not
its rows, so this costs the same for a database of millions of messages as for an empty one. The
downgrade is a plain `DROP COLUMN` too, so the table keeps its `AUTOINCREMENT` (0022) and triggers.

Revision ID: 0023_messages_forwarded
Revises: 0022_ids_autoincrement
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023_messages_forwarded"
down_revision: str | Sequence[str] | None = "0022_ids_autoincrement"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("forwarded", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("messages", "forwarded")
