"""Names stored before Qunyi dropped the characters that show nothing (zero-width spaces, bidi
overrides, soft hyphens, Hangul fillers...) are cleaned as today's code would have stored them, with
what is derived from them: see `memory.name_cleanup`. Message text is left as sent.

Revision ID: 0016_clean_stored_names
Revises: 0015_embeddings_chat_space
"""

from collections.abc import Sequence

from alembic import op

from memory.name_cleanup import clean_stored_names

revision: str = "0016_clean_stored_names"
down_revision: str | Sequence[str] | None = "0015_embeddings_chat_space"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    clean_stored_names(op.get_bind())


def downgrade() -> None:
    """Nothing to do: the characters dropped were kept nowhere, so the cleaning cannot be undone;
    the cleaned names are valid at the revision before too."""
