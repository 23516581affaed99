"""An index on embeddings (chat_id, model, dimension, created_at): the check whether a chat's vectors
changed since recall cached them, and the list of which did, read the index alone. Through the
(chat_id, model) index they read every vector row of the chat, blobs and all, at each question.

Revision ID: 0015_embeddings_chat_space
Revises: 0014_messages_chat_id
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015_embeddings_chat_space"
down_revision: str | Sequence[str] | None = "0014_messages_chat_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_embeddings_chat_space", "embeddings", ["chat_id", "model", "dimension", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_embeddings_chat_space", "embeddings")
