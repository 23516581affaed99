"""What a running process keeps in memory per chat is dropped for a chat merged into another, whether
the bot made the merge (following a supergroup upgrade) or `qunyi chats merge` did from another
process: it is never asked for again, and a chat's vectors can be a large matrix."""

from __future__ import annotations

from sqlalchemy import select

from memory.chat_merge import merge_chats
from memory.embeddings.store import VectorIndex, save_vectors
from memory.jargon import dictionary
from memory.jargon.explain import JargonExplainer
from memory.models import Message
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.recall.glossary import JargonGlossary
from memory.service import MemoryService
from tests.conftest import make_message
from tests.memory.jargon.jargon_helpers import NOW, mine, record
from tests.memory.test_merge_races import chat_ids


async def _two_chats(memory: MemoryService) -> tuple[int, int]:
    """Chats "old" and "new" with two messages each; their ids."""
    await memory.record_many([make_message(n, chat="old", text=f"旧群{n}") for n in (1, 2)])
    await memory.record_many([make_message(n, chat="new", text=f"新群{n}") for n in (3, 4)])
    old, new = await chat_ids(memory, "old", "new")
    return old, new


async def test_the_vectors_of_a_merged_chat_are_dropped_and_the_chat_it_went_into_reloaded(
    memory: MemoryService,
) -> None:
    """The merge moves the old chat's vectors (ids lower than the new chat's) and drops those of the
    two messages whose turn window changed: the new chat's count and newest id stayed as they were,
    so its cached matrix was kept, with a dropped vector and without the moved one."""
    old, new = await _two_chats(memory)
    async with memory.db.write() as session:
        rows = (await session.execute(select(Message.id, Message.chat_id).order_by(Message.id))).all()
        await save_vectors(session, "message", "m", [(i, c) for i, c in rows], [[1.0, 0.0]] * len(rows))
    index = VectorIndex()
    async with memory.db.read() as session:
        await index.search(session, [old, new], "m", [1.0, 0.0], 5)
    assert index.cached_chats() == {old, new}
    await merge_chats(memory.db, old, new, now=NOW)
    async with memory.db.read() as session:
        found = await index.search(session, [new], "m", [1.0, 0.0], 5)
    assert (sorted(key for key, _ in found), index.cached_chats()) == (
        [("message", 1), ("message", 4)],
        {new},
    )


async def test_the_names_of_a_merged_chat_are_dropped(memory: MemoryService) -> None:
    people = PersonMemory(memory.db, PersonsConfig)
    people.attach(memory)
    old, new = await _two_chats(memory)
    for chat_id in (old, new):
        await people.resolver.mentions(chat_id, "name-u1 在吗")
    assert people.resolver.cached_chats() == {old, new}
    await merge_chats(memory.db, old, new, now=NOW)
    await people.resolver.index(new)
    assert people.resolver.cached_chats() == {new}


async def test_the_vocabulary_of_a_merged_chat_is_dropped(memory: MemoryService) -> None:
    ids = await record(memory, 0, ["旧群的梗 来了", "旧群的梗 again"], chat="old")
    await record(memory, 10, ["新群的话"], chat="new")
    old, new = await chat_ids(memory, "old", "new")
    entry = await mine(memory, old, "旧群的梗", ids, scope="chat")
    async with memory.db.write() as session:
        await dictionary.decide(session, [entry], "approve", "admin", NOW, meaning="旧群的笑话")
    explainer = JargonExplainer(memory.db)
    glossary = JargonGlossary(explainer)
    for chat_id in (old, new):
        await glossary.expansion([chat_id], "旧群的梗 是什么", [])
    assert (explainer.cached_chats(), glossary.cached_chats()) == ({old}, {old})
    await merge_chats(memory.db, old, new, now=NOW)
    assert [e.meaning for e in await explainer.explain(new, ["旧群的梗"])] == ["旧群的笑话"]
    await glossary.expansion([new], "旧群的梗 是什么", [])
    assert (explainer.cached_chats(), glossary.cached_chats()) == ({new}, {new})


async def _three_chats(memory: MemoryService) -> tuple[int, int, int]:
    """`_two_chats` and a third chat, "other", with one message; their ids."""
    old, new = await _two_chats(memory)
    await memory.record(make_message(5, chat="other", text="别的群"))
    [other] = await chat_ids(memory, "other")
    return old, new, other


async def test_a_merge_by_another_process_drops_the_merged_chats_vectors_at_the_next_search_anywhere(
    memory: MemoryService,
) -> None:
    """After `qunyi chats merge` the running bot kept the merged chat's matrix until a search in the
    chat it went into happened to reload that one; searches in other chats kept it for good."""
    old, new, other = await _three_chats(memory)
    async with memory.db.write() as session:
        rows = (await session.execute(select(Message.id, Message.chat_id).order_by(Message.id))).all()
        await save_vectors(session, "message", "m", [(i, c) for i, c in rows], [[1.0, 0.0]] * len(rows))
    index = VectorIndex()
    async with memory.db.read() as session:
        await index.search(session, [old, new, other], "m", [1.0, 0.0], 5)
    await merge_chats(memory.db, old, new, now=NOW)
    async with memory.db.read() as session:
        found = await index.search(session, [other], "m", [1.0, 0.0], 5)
    assert ([key for key, _ in found], index.cached_chats()) == ([("message", 5)], {new, other})


async def test_a_merge_by_another_process_drops_the_merged_chats_names_at_the_next_lookup_anywhere(
    memory: MemoryService,
) -> None:
    people = PersonMemory(memory.db, PersonsConfig)
    people.attach(memory)
    old, new, other = await _three_chats(memory)
    for chat_id in (old, new, other):
        await people.resolver.mentions(chat_id, "name-u1 在吗")
    await merge_chats(memory.db, old, new, now=NOW)
    await people.resolver.mentions(other, "name-u1 在吗")
    assert people.resolver.cached_chats() == {new, other}


async def test_the_names_of_the_least_recently_used_chats_are_dropped_past_the_limit(
    memory: MemoryService,
) -> None:
    people = PersonMemory(memory.db, PersonsConfig)
    people.attach(memory)
    for n, chat in enumerate(("a", "b", "c"), start=1):
        await memory.record_many([make_message(n, chat=chat, text=f"{chat}群")])
    a, b, c = await chat_ids(memory, "a", "b", "c")
    resolver = people.resolver
    resolver.max_chats = 2
    await resolver.mentions(a, "name-u1 在吗")
    in_b = await resolver.mentions(b, "name-u1 在吗")
    await resolver.mentions(a, "name-u1 在吗")  # a used again: b is now the least recent
    await resolver.mentions(c, "name-u1 在吗")
    assert resolver.cached_chats() == {a, c}
    assert in_b and await resolver.mentions(b, "name-u1 在吗") == in_b  # rebuilt as it was
    assert resolver.cached_chats() == {c, b}


async def test_the_vectors_of_the_least_recently_searched_chats_are_dropped_past_the_limit(
    memory: MemoryService,
) -> None:
    for n, chat in enumerate(("a", "b", "c"), start=1):
        await memory.record_many([make_message(n, chat=chat, text=f"{chat}群")])
    a, b, c = await chat_ids(memory, "a", "b", "c")
    async with memory.db.write() as session:
        rows = (await session.execute(select(Message.id, Message.chat_id).order_by(Message.id))).all()
        await save_vectors(session, "message", "m", [(i, c) for i, c in rows], [[1.0, 0.0]] * len(rows))
    index = VectorIndex(max_chats=2)
    async with memory.db.read() as session:
        for searched in ([a], [b], [a], [c]):  # b is the least recently searched when c comes
            await index.search(session, searched, "m", [1.0, 0.0], 5)
        assert index.cached_chats() == {a, c}
        assert len(await index.search(session, [a, b, c], "m", [1.0, 0.0], 5)) == 3
        assert index.cached_chats() == {a, b, c}  # never those of the search under way
