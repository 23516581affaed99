"""An edited version of a message remembers the id its first version was recorded under
(`messages.first_id`). An edit is recorded as a message of its own, under a new id; a request to be
forgotten tells what was said before it by the message ids recorded by then (0024), so the edit of a
message recorded before the request, arriving after it, is from before the request too, and never
learnt from again (memory.persons.forgotten). NULL for every message that is no edit, and for the
edits stored before this revision (read by their own id, as before).

A plain `ALTER TABLE … ADD COLUMN` (nullable, no default): SQLite only rewrites the table's schema.

Revision ID: 0025_messages_first_id
Revises: 0024_forgotten_message_mark
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025_messages_first_id"
down_revision: str | Sequence[str] | None = "0024_forgotten_message_mark"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("first_id", sa.Integer, nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "first_id")
