"""A chat merged into another also leaves the database id it had, so that the admin console can send
its old pages (`/chats/<old id>/…`) to the chat it went into. Redirects made before have none.

Revision ID: 0013_redirect_chat_ids
Revises: 0012_chat_redirects
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_redirect_chat_ids"
down_revision: str | Sequence[str] | None = "0012_chat_redirects"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_redirects") as batch:
        batch.add_column(sa.Column("from_chat_id", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_redirects") as batch:
        batch.drop_column("from_chat_id")
