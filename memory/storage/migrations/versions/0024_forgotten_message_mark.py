"""Requests to be forgotten remember the highest message id at the time (`person_forgotten.
last_message_id`): a message recorded before the request but dated after it (a sender's wrong clock,
an import of a later export) is from before the request too, and never learnt from again
(memory.persons.forgotten). Message ids are never handed out twice since 0022, so they are the order
of recording. Requests made before this revision keep NULL and are read by their time alone, as
before.

A plain `ALTER TABLE … ADD COLUMN` (nullable, no default): SQLite only rewrites the table's schema.

Revision ID: 0024_forgotten_message_mark
Revises: 0023_messages_forwarded
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024_forgotten_message_mark"
down_revision: str | Sequence[str] | None = "0023_messages_forwarded"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("person_forgotten", sa.Column("last_message_id", sa.Integer, nullable=True))


def downgrade() -> None:
    op.drop_column("person_forgotten", "last_message_id")
