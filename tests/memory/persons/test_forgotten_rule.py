"""The rule of what was said before a request to be forgotten (memory.persons.forgotten) reads the
same in its three forms: `Forgotten.covers` in Python, `after()` in SQLAlchemy, `COVERS_SQL` in SQL."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, text

from memory.models import Message
from memory.persons.forgotten import COVERS_SQL, all_forgotten
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from tests.conftest import T0
from tests.memory.persons.people_fixtures import Chat

A_YEAR = 365 * 24 * 60  # minutes


async def test_the_three_forms_of_the_rule_agree_on_edits_and_dates(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1: Chat = chat()
    before = await g1.say("u1", "一", minutes=10)
    ahead = await g1.say("u1", "二", minutes=A_YEAR)  # recorded before the request, dated after it
    await g1.say("u1", "三", minutes=A_YEAR + 1)
    await people.admin.forget(before.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    later = await g1.say("u1", "四", minutes=A_YEAR + 2)
    imported = await g1.say("u1", "五", minutes=20)  # recorded after it, dated before it
    g1.n = 1  # the edits come under the messages' own ids (m2, m3; then m4 twice)
    edit = await g1.say("u1", "二改", minutes=A_YEAR, edited=True)
    await g1.say("u1", "三改", minutes=A_YEAR + 1, edited=True)
    g1.n = 3
    edited_later = await g1.say("u1", "四改", minutes=A_YEAR + 2, edited=True)
    g1.n = 3
    edited_twice = await g1.say("u1", "四再改", minutes=A_YEAR + 2, edited=True)
    assert [edit.first_id, edited_later.first_id, edited_twice.first_id] == [
        ahead.message_id,
        later.message_id,
        later.message_id,
    ]
    async with memory.db.read() as session:
        (request,) = (await all_forgotten(session)).values()
        rows = (await session.scalars(select(Message).order_by(Message.id))).all()
        after = set((await session.scalars(select(Message.id).where(request.after()))).all())
        in_sql = set(
            (
                await session.scalars(
                    text(
                        f"SELECT m.id FROM messages m JOIN person_forgotten f ON f.person_id = m.person_id "
                        f"WHERE {COVERS_SQL}"
                    )
                )
            ).all()
        )
    covered = {row.id for row in rows if request.covers(row.id, row.time, row.first_id)}
    assert {row.text for row in rows if row.id in covered} == {"一", "二改", "三改", "五"}
    assert in_sql == covered and after == {row.id for row in rows} - covered
    assert imported.message_id in covered
