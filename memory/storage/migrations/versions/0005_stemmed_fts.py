"""Full-text indexes stem English words (FTS5 porter over unicode61), so "painting" finds "paint" and
"car" no longer finds "care". Each index is rebuilt from the tokens it already stores.

Revision ID: 0005_stemmed_fts
Revises: 0003_embeddings
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005_stemmed_fts"
down_revision: str | Sequence[str] | None = "0003_embeddings"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("messages_fts", "chat_history_fts", "preference_fts")


def _rebuild(table: str, tokenizer: str) -> None:
    op.execute(f"CREATE VIRTUAL TABLE {table}_rebuilt USING fts5(body, tokenize = '{tokenizer}')")
    op.execute(f"INSERT INTO {table}_rebuilt(rowid, body) SELECT rowid, body FROM {table}")
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {table}_rebuilt RENAME TO {table}")


def upgrade() -> None:
    for table in TABLES:
        _rebuild(table, "porter unicode61 remove_diacritics 0")


def downgrade() -> None:
    for table in TABLES:
        _rebuild(table, "unicode61 remove_diacritics 0")
