"""Ids are never handed out twice (`AUTOINCREMENT`) in every other table whose ids people see or other rows
keep: SQLite otherwise gives a new row the id of the highest row once that row is deleted, so a jargon id
an admin read in an old listing, a person's `#id`, or a message id kept in a JSON list, a fact or a
vector could name a newer row. Each table is rebuilt with its rows, ids, indexes and triggers (see
`memory.storage.migrations.autoincrement`); its id sequence starts above every id anything still names
for it, so no id deleted before this revision comes back either.

Tables and what else names their ids:
- messages: the id floor left by deletions (`memory.message_ids`), the full-text indexes (rowid), jargon
  evidence, facts (`superseded_by`, `seen_message_ids`), the timeline, LLM gaps, topics and ChatHistory
  (`message_ids`, `source_message_ids`, `digest_tried`), vectors of kind `message`;
- chats: the id floor left by merges, merge redirects (`from_chat_id`), job cursors, alias versions,
  the forget log;
- persons: forgotten persons, preference documents, topic and ChatHistory participants;
- jargon: the review trail (kept after an entry is deleted);
- person_facts (ids in `qunyi people show --json`), topic_cache (the web console's topic ids),
  forget_log (`qunyi forget --log`, the web console);
- preference_docs: its full-text index (rowid) and vectors of kind `preference`.

The upgrade copies these tables, so it first checks the disk has room for that (see README "Upgrading").

Revision ID: 0022_ids_autoincrement
Revises: 0021_chat_history_autoincrement
"""

from collections.abc import Sequence

from memory.storage.migrations.autoincrement import rebuild, require_room_for_rebuild

revision: str = "0022_ids_autoincrement"
down_revision: str | Sequence[str] | None = "0021_chat_history_autoincrement"
branch_labels: str | Sequence[str] | None = None
# The branches that made persons, jargon and the topic cache's later columns: rebuilt here, so first.
depends_on: str | Sequence[str] | None = ("0003_history_extras", "0003_persons", "0004_jargon")


def _in_json(table: str, column: str, path: str = "") -> str:
    """The highest id in the JSON lists of `table.column` (of `path` in each item, for lists of objects)."""
    if path:
        value, wanted = (
            f"json_extract(item.value, '{path}')",
            f"item.type = 'object' AND json_type(item.value, '{path}')",
        )
    else:
        value, wanted = "item.value", "item.type"
    return (
        f"SELECT max({value}) FROM {table}, json_each({table}.{column}) AS item "
        f"WHERE json_valid({table}.{column}) AND {wanted} = 'integer'"
    )


def _last_rowid(fts_table: str) -> str:
    return f"SELECT rowid FROM {fts_table} ORDER BY rowid DESC LIMIT 1"  # FTS5 walks rowids backwards


def _vectors(kind: str) -> str:
    return f"SELECT max(ref_id) FROM embeddings WHERE kind = '{kind}'"


# Table → what else names its ids (queries returning the highest such id).
FLOORS: dict[str, list[str]] = {
    "messages": [
        "SELECT max(value) FROM id_floors WHERE name = 'messages'",
        _last_rowid("messages_fts"),
        _last_rowid("message_windows_fts"),
        "SELECT max(message_id) FROM jargon_evidence",
        "SELECT max(message_id) FROM preference_docs",
        "SELECT max(message_id) FROM person_aliases",
        "SELECT max(message_id) FROM person_facts",
        "SELECT max(superseded_by) FROM person_facts",
        _in_json("person_facts", "seen_message_ids"),
        _in_json("person_timeline", "message_ids"),
        _in_json("person_llm_gaps", "message_ids"),
        _in_json("topic_cache", "message_ids"),
        _in_json("chat_history", "source_message_ids"),
        _in_json("chat_history", "digest_tried"),
        _vectors("message"),
    ],
    "chats": [
        "SELECT max(value) FROM id_floors WHERE name = 'chats'",
        "SELECT max(from_chat_id) FROM chat_redirects",
        "SELECT max(chat_id) FROM job_state",
        "SELECT max(chat_id) FROM person_alias_versions",
        "SELECT max(chat_id) FROM forget_log",
    ],
    "persons": [
        "SELECT max(person_id) FROM person_forgotten",
        "SELECT max(person_id) FROM preference_docs",
        _in_json("topic_cache", "participants"),
        _in_json("chat_history", "participants", "$.person_id"),
    ],
    "jargon": ["SELECT max(jargon_id) FROM jargon_reviews"],
    "person_facts": [],
    "topic_cache": [],
    "forget_log": [],
    "preference_docs": [_last_rowid("preference_fts"), _vectors("preference")],
}


def upgrade() -> None:
    require_room_for_rebuild()
    for table, floors in FLOORS.items():
        rebuild(table, autoincrement=True, floors=floors)


def downgrade() -> None:
    for table in reversed(FLOORS):
        rebuild(table, autoincrement=False)
