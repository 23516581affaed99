"""Timeline lines naming a name (`persons.timeline_text`): a declared name is cleaned, or goes when
nothing is left of it (no alias was recorded); a card change is cleaned and goes when it is no change
any more (the two cards are one name now, or the new card is nothing), and one whose previous card was
nothing but hidden characters is measured against the card before it, as the observer would have."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection, text

from memory.name_cleanup.sql import HOLDS_INVISIBLE
from memory.persons import timeline_text
from memory.persons.forgotten import Forgotten
from memory.persons.names import clean_name, name_key
from memory.persons.observe import previous_card

if TYPE_CHECKING:
    from memory.name_cleanup.run import CleanupReport


def clean_timeline(connection: Connection, report: CleanupReport) -> None:
    """Rewrite or drop the card and alias lines that hold hidden characters (after the messages'
    cards are cleaned: a previous card is looked up among them)."""
    found = connection.execute(
        text(
            "SELECT id, person_id, chat_id, time, kind, text, json_extract(message_ids, '$[0]') "
            "FROM person_timeline "
            f"WHERE kind IN ('card', 'alias') AND {HOLDS_INVISIBLE}(text)"
        )
    )
    for entry, person, chat, when, kind, line, message_id in found.all():
        if kind == "alias":
            cleaned = _declared(line)
        else:
            cleaned = _card_change(connection, person, chat, when, line, message_id)
        if cleaned is None:
            connection.execute(text("DELETE FROM person_timeline WHERE id = :id"), {"id": entry})
            report.timeline_dropped += 1
        elif cleaned != line:
            connection.execute(
                text("UPDATE person_timeline SET text = :text WHERE id = :id"), {"text": cleaned, "id": entry}
            )
            report.timeline += 1


def _declared(line: str) -> str | None:
    read = timeline_text.read_declared(line)
    if read is None:
        return line  # not a line the observer wrote whole (cut at 512 characters): left as it is
    source, alias = read
    cleaned = clean_name(alias)
    return timeline_text.declared(source, cleaned) if name_key(cleaned) else None


def _card_change(
    connection: Connection, person: int, chat: int | None, when: float, line: str, message_id: int | None
) -> str | None:
    read = timeline_text.read_card_change(line)
    if read is None:
        return line
    card, previous = (clean_name(name) for name in read)
    if not card:
        return None
    if not previous and chat is not None and message_id is not None:
        # Run by 0016, before requests had a message mark (0024): their time alone.
        asked = connection.execute(
            text("SELECT time FROM person_forgotten WHERE person_id = :person"), {"person": person}
        ).scalar()
        forgotten = None if asked is None else Forgotten(float(asked), None)
        before = connection.execute(previous_card(chat, person, when, message_id, forgotten)).scalar()
        previous = clean_name(before or "")
    if not previous or name_key(previous) == name_key(card):
        return None
    return timeline_text.card_change(card, previous)
