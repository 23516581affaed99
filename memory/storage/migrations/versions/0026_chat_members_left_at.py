"""A membership remembers when its member left the chat (`chat_members.left_at`, POSIX seconds): a
platform said they left or were removed, after their last message there. NULL while they are in it,
and for every membership stored before this revision (present, as before). Cross-chat recall
(`[recall] per_person_cross_chat`) opens only the chats a person is in; `/who` and the people pages
mark a member who left (memory.membership).

A plain `ALTER TABLE … ADD COLUMN` (nullable, no default): SQLite only rewrites the table's schema.

Revision ID: 0026_chat_members_left_at
Revises: 0025_messages_first_id
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026_chat_members_left_at"
down_revision: str | Sequence[str] | None = "0025_messages_first_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("chat_members", sa.Column("left_at", sa.Float, nullable=True))


def downgrade() -> None:
    op.drop_column("chat_members", "left_at")
