"""Meanings members gave before the messages the mining job reads: looked up in the chat's messages.

The job hears explanations ("开炉就是去吃火锅", memory.jargon.explanations) in the messages it mines and
in the last `history_messages` before them, read again after a restart. An explanation older than
that, given before the term was used often enough to be mined, is read back from the full-text index
when the term needs a meaning: the chat's newest `LOOKUP_ROWS` messages holding the term (never another
chat's), with the few messages after a question about it (where a bare answer, "就是训模型啦", is).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory import messages
from memory.jargon.explanations import ANSWER_WITHIN, MemberMeaning, asked_about, member_meanings
from memory.jargon.types import MinerMessage
from memory.messages import StoredMessage
from memory.storage.fts import term_expression
from memory.text import analysed

LOOKUP_ROWS = 200
"""How many of a chat's messages holding a term are read for its explanation, newest first."""

# Newest first through the index's own rowid order (FTS5 walks it backwards from `:upto`), each match
# kept when it is the chat's: the walk stops at `:rows` of them.
_HOLDING = text(
    "SELECT rowid FROM messages_fts WHERE messages_fts MATCH :match AND rowid <= :upto AND EXISTS "
    "(SELECT 1 FROM messages WHERE messages.id = messages_fts.rowid AND messages.chat_id = :chat) "
    "ORDER BY rowid DESC LIMIT :rows"
)


def to_miner(message: StoredMessage) -> MinerMessage:
    """A stored message as the miner sees it (key = database id)."""
    speaker = str(message.person_id) if message.person_id is not None else message.speaker
    return MinerMessage(str(message.id), analysed(message.text), speaker, message.is_bot, message.forwarded)


async def explained_earlier(
    session: AsyncSession, chat_id: int, terms: Iterable[str], upto: int, rows: int = LOOKUP_ROWS
) -> list[MemberMeaning]:
    """The latest meaning members of `chat_id` gave each of `terms` (normalised) in its messages up to
    id `upto`, as `member_meanings` reads them, among the newest `rows` messages holding the term."""
    found: list[MemberMeaning] = []
    for term in terms:
        match = term_expression(term)
        if match is None:
            continue
        params = {"match": match, "upto": upto, "chat": chat_id, "rows": rows}
        ids = [int(row[0]) for row in await session.execute(_HOLDING, params)]
        said = {m.id: m for m in await messages.by_ids(session, ids)}
        for question in [m for m in said.values() if term in asked_about(m.text)]:
            said.update((m.id, m) for m in await messages.after(session, chat_id, question.id, ANSWER_WITHIN))
        # Runs of messages apart in the chat stay more than ANSWER_WITHIN apart here: a question's
        # followers are all read, so what comes next is at least one further on.
        heard = member_meanings([to_miner(said[i]) for i in sorted(said)]).get(term)
        if heard is not None:
            found.append(heard)
    return found
