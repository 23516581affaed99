"""Looking members of a big chat up by user id, person id or name without reading every member."""

from __future__ import annotations

from memory.persons.member_search import find_members
from memory.persons.service import PersonMemory
from memory.storage import Database
from tests.query_plans import largest_result

MEMBERS = 25


async def test_who_by_user_id_or_person_id_reads_no_whole_chat(
    chat, people: PersonMemory, db: Database
) -> None:
    """Found by the fifth QA pass: a name the alias index did not know (a user id, `#12`) made `who`
    (`qunyi who`, `people show`, the person tool) read the full record of every member of the chat."""
    g1 = chat()
    said = {f"u{n}": await g1.say(f"u{n}", f"消息 {n}", card=f"成员{n}") for n in range(MEMBERS)}
    chat_id, wanted = said["u7"].chat_id, said["u7"].person_id
    assert wanted is not None
    await people.who(chat_id, "成员1")  # the alias index is built once per chat version, then cached
    for name in ("u7", "@u7", f"#{wanted}", str(wanted)):
        with largest_result(db) as largest:
            answer = await people.who(chat_id, name)
        assert [r.person_id for r in answer.records] == [wanted], name
        assert largest[0] < MEMBERS, f"looking up {name!r} read every member"
    assert (await people.who(chat_id, "u999")).records == []


async def test_a_member_search_is_bounded_and_wildcards_match_nothing_of_their_own(
    chat, people: PersonMemory, db: Database
) -> None:
    g1 = chat()
    for n in range(MEMBERS):
        await g1.say(f"u{n}", "hi", card=f"成员_{n}")
    first = await g1.say("x", "hi", card="百分之百%")
    async with db.read() as session:
        assert len(await find_members(session, first.chat_id, "成员", 10)) == 10
        assert len(await find_members(session, first.chat_id, "成员_1", 50)) == 11  # 成员_1, 成员_10…19
        assert await find_members(session, first.chat_id, "百分之百%", 50) == [first.person_id]
        assert await find_members(session, first.chat_id, "%", 50) == [], "no wildcard, and no name"
        assert await find_members(session, first.chat_id, "  ", 50) == []


async def test_who_by_a_merged_away_user_id_finds_the_survivor_in_their_chats_only(
    chat, people: PersonMemory
) -> None:
    """Found by QA pass 18: after a merge, `/who <user id>` of the account merged away found no one,
    since only the survivor's own user id was looked up; it must find them, but never from a chat where
    the survivor is not known."""
    g1, g2, g3 = chat("g1"), chat("g2"), chat("g3")
    main = await g1.say("u1", "你好", card="阿红")
    alt = await g2.say("u1-alt", "我是小号", card="阿红小号")
    elsewhere = await g3.say("u9", "路过", card="路人")
    assert main.person_id is not None and alt.person_id is not None
    await people.admin.merge(main.person_id, alt.person_id)
    for chat_id in (main.chat_id, alt.chat_id):
        answer = await people.who(chat_id, "u1-alt")
        assert [r.person_id for r in answer.records] == [main.person_id], chat_id
        assert [r.person_id for r in (await people.who(chat_id, "@u1-alt")).records] == [main.person_id]
    assert (await people.who(elsewhere.chat_id, "u1-alt")).records == [], "found from a chat they are not in"
    assert (await people.who(elsewhere.chat_id, "u1")).records == []
