"""An index on messages (chat_id, id): a chat's newest messages (the reply's recent window) and its
messages after a job's cursor are a seek and a short walk, where the (chat_id, time) index made SQLite
read and sort every message of the chat to order them by id.

Revision ID: 0014_messages_chat_id
Revises: 0013_redirect_chat_ids
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014_messages_chat_id"
down_revision: str | Sequence[str] | None = "0013_redirect_chat_ids"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_messages_chat_id", "messages", ["chat_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_messages_chat_id", "messages")
