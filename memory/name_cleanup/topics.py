"""The topic check's thread state per chat: the names of the speakers in its window (for telling who a
message is addressed to), matched as `normalize_name` writes them, cleaned like the names they came
from."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from memory.text import holds_invisible
from memory.topics.check import JOB
from memory.topics.features import normalize_name
from memory.types import clean_name_field

if TYPE_CHECKING:
    from memory.name_cleanup.run import CleanupReport


def clean_topic_states(connection: Connection, report: CleanupReport) -> None:
    """Clean the speakers' names in each chat's state (one row per chat, read whole)."""
    found = connection.execute(text("SELECT chat_id, data FROM job_state WHERE job = :job"), {"job": JOB})
    for chat, data in found.all():
        state = json.loads(data) if isinstance(data, str) else None
        disentangler = _disentangler(state)
        if disentangler is None:
            continue
        names = disentangler["names"]
        cleaned = {speaker: _cleaned(listed) for speaker, listed in names.items()}
        if cleaned == names:
            continue
        disentangler["names"] = cleaned
        connection.execute(
            text("UPDATE job_state SET data = :data WHERE job = :job AND chat_id = :chat"),
            {"data": json.dumps(state), "job": JOB, "chat": chat},
        )
        report.topic_states += 1


def _disentangler(state: Any) -> dict[str, Any] | None:
    """The thread state inside a job's data, when it has speakers' names (and is one at all)."""
    disentangler = state.get("disentangler") if isinstance(state, dict) else None
    if isinstance(disentangler, dict) and isinstance(disentangler.get("names"), dict):
        return disentangler
    return None


def _cleaned(names: Any) -> Any:
    """A speaker's names as the disentangler lists them (sorted, distinct, none empty), cleaned."""
    if not isinstance(names, list) or not any(isinstance(n, str) and holds_invisible(n) for n in names):
        return names
    return sorted({c for n in names if (c := normalize_name(clean_name_field(str(n))))})
