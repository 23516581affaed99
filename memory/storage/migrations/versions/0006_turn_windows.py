"""The turn-window full-text index: each searchable message with the turns just before and after it
(same chat, within 30 minutes), filled from the existing messages.

Revision ID: 0006_turn_windows
Revises: 0005_stemmed_fts
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006_turn_windows"
down_revision: str | Sequence[str] | None = "0005_stemmed_fts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GAP_SECONDS = 1800.0


def upgrade() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE message_windows_fts USING fts5(body, "
        "tokenize = 'porter unicode61 remove_diacritics 0')"
    )
    op.execute(
        "INSERT INTO message_windows_fts(rowid, body) "
        "SELECT id, trim(CASE WHEN prev_time IS NOT NULL AND time - prev_time <= :gap THEN prev_body "
        "ELSE '' END || ' ' || body || ' ' || CASE WHEN next_time IS NOT NULL AND next_time - time <= :gap "
        "THEN next_body ELSE '' END) FROM ("
        "SELECT m.id, m.time, f.body, "
        "lag(f.body) OVER w AS prev_body, lag(m.time) OVER w AS prev_time, "
        "lead(f.body) OVER w AS next_body, lead(m.time) OVER w AS next_time "
        "FROM messages m JOIN messages_fts f ON f.rowid = m.id "
        "WINDOW w AS (PARTITION BY m.chat_id ORDER BY m.time, m.id))".replace(":gap", str(GAP_SECONDS))
    )


def downgrade() -> None:
    op.execute("DROP TABLE message_windows_fts")
