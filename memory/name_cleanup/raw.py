"""What the platform sent, as today's `ChatMessage` keeps it (`clean_name_field`): the sender name and
card on each message, chat names, and each person's nickname and group cards (their latest non-empty
ones: a name that cleans to nothing is unknown and replaces nothing, so the one before it comes back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection, text

from memory.embeddings.store import vectors_of
from memory.messages import neighbour_pairs, neighbours_query, with_neighbours
from memory.name_cleanup.sql import HOLDS_INVISIBLE, batches, json_ids
from memory.types import clean_name_field

if TYPE_CHECKING:
    from memory.name_cleanup.run import CleanupReport

# The sender's latest name or card among messages they sent after asking to be forgotten (the ingest's
# upserts never take an older one), per person (and chat): SQLite takes the bare column from the row
# of max(time).
_NOT_FORGOTTEN = (
    "NOT EXISTS (SELECT 1 FROM person_forgotten f WHERE f.person_id = m.person_id AND f.time >= m.time)"
)
_LATEST_NICKNAMES = text(
    "SELECT m.person_id, m.sender_name, max(m.time) FROM messages m "
    "WHERE m.person_id IN (SELECT value FROM json_each(:persons)) AND m.sender_name != '' "
    f"AND {_NOT_FORGOTTEN} GROUP BY m.person_id"
)
_LATEST_CARDS = text(
    "SELECT m.chat_id, m.person_id, m.sender_card, max(m.time) FROM messages m "
    "WHERE m.person_id IN (SELECT value FROM json_each(:persons)) "
    "AND m.chat_id IN (SELECT value FROM json_each(:chats)) AND m.sender_card != '' "
    f"AND {_NOT_FORGOTTEN} GROUP BY m.chat_id, m.person_id"
)


def clean_messages(connection: Connection, report: CleanupReport) -> list[int]:
    """Each message's sender name and card; the vectors of the messages whose embedded turn window
    shows a cleaned sender go, for the backfill to embed them again. Returns the messages changed."""
    found = connection.execute(
        text(
            "SELECT id, sender_name, sender_card FROM messages "
            f"WHERE {HOLDS_INVISIBLE}(sender_name) OR {HOLDS_INVISIBLE}(sender_card)"
        )
    )
    changes = []
    for message_id, name, card in found.all():
        cleaned = {"id": message_id, "name": clean_name_field(name), "card": clean_name_field(card)}
        if (cleaned["name"], cleaned["card"]) != (name, card):
            changes.append(cleaned)
    if not changes:
        return []
    connection.execute(
        text("UPDATE messages SET sender_name = :name, sender_card = :card WHERE id = :id"), changes
    )
    report.messages = len(changes)
    for ids in batches([c["id"] for c in changes]):
        params: dict[str, object] = {}
        around = neighbour_pairs(connection.execute(neighbours_query(ids, params), params).all())
        touched = sorted(with_neighbours(ids, around))
        report.message_vectors += connection.execute(vectors_of("message", touched)).rowcount
    return [c["id"] for c in changes]


def clean_chats(connection: Connection, report: CleanupReport) -> None:
    """Chat names; one that cleans to nothing is unknown (""): messages do not keep the chat's name,
    so an earlier one cannot come back."""
    found = connection.execute(text(f"SELECT id, name FROM chats WHERE {HOLDS_INVISIBLE}(name)"))
    changes = [{"id": i, "name": clean_name_field(n)} for i, n in found.all() if clean_name_field(n) != n]
    if changes:
        connection.execute(text("UPDATE chats SET name = :name WHERE id = :id"), changes)
    report.chats = len(changes)


def clean_nicknames(connection: Connection, report: CleanupReport) -> None:
    """Each person's nickname; one that cleans to nothing gives way to the latest non-empty name on
    their messages (else "")."""
    found = connection.execute(text(f"SELECT id, nickname FROM persons WHERE {HOLDS_INVISIBLE}(nickname)"))
    cleaned = {i: clean_name_field(n) for i, n in found.all() if clean_name_field(n) != n}
    blank = [i for i, n in cleaned.items() if not n]
    if blank:
        latest = connection.execute(_LATEST_NICKNAMES, {"persons": json_ids(blank)})
        cleaned.update({int(person): str(name) for person, name, _ in latest.all()})
    if cleaned:
        connection.execute(
            text("UPDATE persons SET nickname = :name WHERE id = :id"),
            [{"id": i, "name": n} for i, n in cleaned.items()],
        )
    report.nicknames = len(cleaned)


def clean_cards(connection: Connection, report: CleanupReport) -> None:
    """Each member's group card in a chat; one that cleans to nothing gives way to the latest
    non-empty card on their messages there (else "")."""
    found = connection.execute(
        text(f"SELECT chat_id, person_id, card FROM chat_members WHERE {HOLDS_INVISIBLE}(card)")
    )
    cleaned = {(c, p): clean_name_field(card) for c, p, card in found.all() if clean_name_field(card) != card}
    blank = {key for key, card in cleaned.items() if not card}
    if blank:
        params = {"chats": json_ids([c for c, _ in blank]), "persons": json_ids([p for _, p in blank])}
        for chat, person, card, _ in connection.execute(_LATEST_CARDS, params).all():
            if (chat, person) in blank:
                cleaned[(chat, person)] = str(card)
    if cleaned:
        connection.execute(
            text("UPDATE chat_members SET card = :card WHERE chat_id = :chat AND person_id = :person"),
            [{"chat": c, "person": p, "card": card} for (c, p), card in cleaned.items()],
        )
    report.cards = len(cleaned)
