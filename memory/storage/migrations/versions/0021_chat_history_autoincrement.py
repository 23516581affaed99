"""ChatHistory ids are never handed out twice (`AUTOINCREMENT`): SQLite otherwise gives a new row the id of
the highest row once that row is deleted, so after forgetting `qunyi forget --log` could list one id for
two topics, and a topic id read for a reply's context could name a newer topic by the time its recall
count was raised. The table is rebuilt with its rows, ids and indexes; the id sequence starts above every
id the forget log names, so no id forgotten before this revision comes back either.

Revision ID: 0021_chat_history_autoincrement
Revises: 0020_person_gap_tried_at
"""

from collections.abc import Sequence

from memory.storage.migrations.autoincrement import rebuild

revision: str = "0021_chat_history_autoincrement"
down_revision: str | Sequence[str] | None = "0020_person_gap_tried_at"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    rebuild("chat_history", autoincrement=True, floors=["SELECT max(chat_history_id) FROM forget_log"])


def downgrade() -> None:
    rebuild("chat_history", autoincrement=False)
