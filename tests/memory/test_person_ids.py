"""Person ids grow with the people, not with their messages."""

from __future__ import annotations

from sqlalchemy import select, text

from memory.models import Person
from memory.service import MemoryService
from tests.conftest import make_message


async def test_messages_of_known_senders_use_up_no_person_ids(memory: MemoryService) -> None:
    for n in range(1, 6):  # one at a time: each the first of its batch
        await memory.record(make_message(n, sender=f"u{n % 2}", text=f"第{n}条"))
    await memory.record_many(
        [make_message(n, sender=f"u{n % 2}", text=f"第{n}条") for n in range(6, 30)]  # later ones held
    )
    await memory.record(make_message(30, sender="u-new", text="新来的"))
    async with memory.db.read() as session:
        people = dict((await session.execute(select(Person.platform_user_id, Person.id))).all())
        counts = dict((await session.execute(select(Person.platform_user_id, Person.message_count))).all())
        sequence = (
            await session.execute(text("SELECT seq FROM sqlite_sequence WHERE name = 'persons'"))
        ).scalar_one()
    assert sorted(people.values()) == [1, 2, 3] and people["u-new"] == 3 and sequence == 3
    assert counts == {"u0": 14, "u1": 15, "u-new": 1}
