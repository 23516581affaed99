"""Who the people a job read before waiting on the model are when it writes: a `qunyi people merge`
(memory.persons.admin) landing meanwhile deletes the merged person's row and routes their account to
the survivor (`PersonAccount`), so what was found about them is written to the survivor; a person whose
row is gone with no such route is dropped with a log line.

People are remembered by their account (platform, user id), not only their id: SQLite may give a
merged person's id to the next new person, and facts must not land on a stranger."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Person, PersonAccount
from memory.persons.facts import Statement

log = logging.getLogger(__name__)

Identity = tuple[str, str]
"""A person's own account: (platform, platform user id)."""


async def identities(session: AsyncSession, person_ids: Iterable[int]) -> dict[int, Identity]:
    """The account of each of these people still stored (read before the wait)."""
    wanted = set(person_ids)
    if not wanted:
        return {}
    rows = await session.execute(
        select(Person.id, Person.platform, Person.platform_user_id).where(Person.id.in_(wanted))
    )
    return {int(pid): (platform, user) for pid, platform, user in rows.all()}


async def current_ids(session: AsyncSession, seen: Mapping[int, Identity]) -> dict[int, int | None]:
    """Each person read as `seen` now: the same id, the survivor their account was merged into, or None
    (logged) when they are gone. Call it in the transaction that writes."""
    if not seen:
        return {}
    now = await identities(session, seen)
    moved = [ident for pid, ident in seen.items() if now.get(pid) != ident]
    routes: dict[Identity, int] = {}
    if moved:
        rows = await session.execute(
            select(PersonAccount.platform, PersonAccount.platform_user_id, PersonAccount.person_id).where(
                tuple_(PersonAccount.platform, PersonAccount.platform_user_id).in_(moved)
            )
        )
        routes = {(platform, user): int(pid) for platform, user, pid in rows.all()}
    found: dict[int, int | None] = {}
    for pid, ident in seen.items():
        if now.get(pid) == ident:
            found[pid] = pid
        elif ident in routes:
            found[pid] = routes[ident]
            log.info("person %d was merged into %d meanwhile: what was learnt goes there", pid, routes[ident])
        else:
            found[pid] = None
            log.info("person %d is gone since they were read: what was learnt about them is dropped", pid)
    return found


def moved_statements(found: Sequence[Statement], ids: Mapping[int, int | None]) -> list[Statement]:
    """`found` about the people as `ids` maps them now; statements about someone gone are left out."""
    kept: list[Statement] = []
    for statement in found:
        person = ids.get(int(statement.person_id))
        if person is not None:
            kept.append(replace(statement, person_id=str(person)))
    return kept
