"""What an admin took out of a person's facts (`--remove-fact`, or `--set-fact` replacing a key's values),
kept so that it is not learnt back from what the person said before the edit.

Consolidation reads a chat's messages some time after they are recorded; one recorded before the edit
but not read yet ("我也喜欢猫" after an admin replaced likes 猫 by 狗) would otherwise bring the value
back. A message is from before an edit by the rule of a request to be forgotten
(`memory.persons.forgotten.Forgotten.covers`): recorded by then (its first version's id at most the
highest message id at the edit), or dated by then (an imported history). Later messages are learnt
from as ever: the person may say it again.

The edits of a chat are kept in its `job_state` row of job `EDITS_JOB` (a handful per chat: one per
person, key and value, the latest kept). They follow the person and the chat: a person merge gives the
merged person's edits to the survivor (`move_fact_edits`), a chat merge keeps both chats' edits in the
chat merged into (`folded_edits`), so a value an admin took out is not learnt back from a message read
after the merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import JobState, Message
from memory.persons.facts import Fact, Statement, same_value
from memory.persons.forgotten import Forgotten, newest_message_id

EDITS_JOB = "person_fact_edits"


@dataclass(frozen=True, slots=True)
class FactEdit:
    """Person `person_id`'s facts of `key` (of that value only, when `value` is not None) were taken out
    at `mark`'s time, when the highest message id was its `last_message_id`."""

    person_id: int
    key: str
    value: str | None
    mark: Forgotten

    def overrules(self, fact: Fact, first_id: int | None) -> bool:
        """Whether `fact` restates what this edit took out, from a message from before it."""
        if str(self.person_id) != fact.person_id or self.key != fact.key:
            return False
        if self.value is not None and not same_value(self.value, fact.value):
            return False
        message_id = int(fact.message_key) if fact.message_key.isdigit() else 0
        return self.mark.covers(message_id, fact.time.timestamp(), first_id)

    def as_json(self) -> list[Any]:
        return [self.person_id, self.key, self.value, self.mark.time, self.mark.last_message_id]


async def note_fact_edit(
    session: AsyncSession, chat_id: int, person_id: int, key: str, value: str | None, time: float
) -> None:
    """Keep (in the caller's transaction) that an admin took out the person's facts of `key` (or its
    `value` only) in the chat at `time`."""
    edit = FactEdit(person_id, key, value, Forgotten(time, await newest_message_id(session)))
    state = await session.get(JobState, (EDITS_JOB, chat_id))
    if state is None:
        state = JobState(job=EDITS_JOB, chat_id=chat_id, cursor=0, last_run=time, data={})
        session.add(state)
    kept = [
        e
        for e in _edits(state)
        if (e.person_id, e.key) != (person_id, key) or (value is not None and e.value != value)
    ]
    state.data = {"edits": [e.as_json() for e in (*kept, edit)]}  # a new dict: JSON is saved when replaced


async def move_fact_edits(session: AsyncSession, survivor_id: int, merged_id: int) -> None:
    """Give the merged person's edits, in every chat, to the survivor (in the caller's transaction)."""
    for state in (await session.scalars(select(JobState).where(JobState.job == EDITS_JOB))).all():
        edits = _edits(state)
        if any(e.person_id == merged_id for e in edits):
            moved = [replace(e, person_id=survivor_id) if e.person_id == merged_id else e for e in edits]
            state.data = _data(moved)


def folded_edits(*datas: dict[str, Any] | None) -> dict[str, Any]:
    """The `job_state` data of chats merged into one: every chat's edits, one per person, key and value
    (the later, which covers every message the earlier did)."""
    return _data([e for data in datas for e in _edits_of(data)])


def _data(edits: Sequence[FactEdit]) -> dict[str, Any]:
    latest: dict[tuple[int, str, str | None], FactEdit] = {}
    for edit in edits:
        key = (edit.person_id, edit.key, edit.value)
        latest[key] = max(latest.get(key, edit), edit, key=_later)
    return {"edits": [e.as_json() for e in latest.values()]}


async def without_overruled(
    session: AsyncSession, chat_id: int, found: Sequence[Statement]
) -> list[Statement]:
    """`found` without the facts an admin's edit in the chat took out, when stated before it."""
    state = await session.get(JobState, (EDITS_JOB, chat_id))
    edits = _edits(state) if state is not None else []
    facts = [f for f in found if isinstance(f, Fact) and f.message_key.isdigit()]
    if not edits or not facts:
        return list(found)
    ids = sorted({int(f.message_key) for f in facts})
    first_ids = dict(
        (await session.execute(select(Message.id, Message.first_id).where(Message.id.in_(ids)))).all()
    )
    return [
        f
        for f in found
        if not (isinstance(f, Fact) and any(e.overrules(f, _first_id(first_ids, f)) for e in edits))
    ]


def _first_id(first_ids: dict[int, int | None], fact: Fact) -> int | None:
    return first_ids.get(int(fact.message_key)) if fact.message_key.isdigit() else None


def _later(edit: FactEdit) -> tuple[float, int]:
    return edit.mark.time, edit.mark.last_message_id or 0


def _edits(state: JobState) -> list[FactEdit]:
    return _edits_of(state.data)


def _edits_of(data: dict[str, Any] | None) -> list[FactEdit]:
    return [
        FactEdit(int(person), str(key), value, Forgotten(float(time), int(mark)))
        for person, key, value, time, mark in (data or {}).get("edits", [])
    ]
