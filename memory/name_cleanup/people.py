"""Names people's memory keeps, as `clean_name` leaves them today: aliases (with their keys; one that
becomes another alias of the person folds into it, one with nothing left goes, as `add_alias` would
never have stored it), the name the bot uses for a person in each chat (unique there: a name another
member already has gets the id suffix naming gives, and one with nothing left is chosen again from the
card, nickname or id), and each person's first name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from memory.name_cleanup.sql import HOLDS_INVISIBLE
from memory.persons.names import clean_name, name_key
from memory.persons.naming import DEFAULT_MAX_CHARS, choose_person_name, name_source
from memory.persons.sightings import Sightings
from memory.persons.store import first_card_name, version_bump

if TYPE_CHECKING:
    from memory.name_cleanup.run import CleanupReport

Renamed = dict[tuple[int, int], tuple[str, str]]
"""(chat, person) → (name before, name now) of the names the bot uses that changed."""

_SAME_ALIAS = text(
    "SELECT id, count, first_seen, last_seen FROM person_aliases WHERE person_id = :person "
    "AND ifnull(chat_id, 0) = :scope AND alias_key = :key AND source = :source AND id != :id"
)


def clean_people(connection: Connection, report: CleanupReport) -> Renamed:
    """Aliases, per-chat names and first names; the alias index of every scope touched is marked
    changed (`bump_version`), so a running resolver rebuilds it. Returns the per-chat names renamed."""
    scopes = _clean_aliases(connection, report)
    renamed = _clean_chat_names(connection, report)
    _clean_person_names(connection, renamed, report)
    scopes |= {chat for chat, _ in renamed}
    for scope in sorted(scopes):
        connection.execute(version_bump(scope))
    return renamed


def _clean_aliases(connection: Connection, report: CleanupReport) -> set[int]:
    """Returns the scopes (chat ids, 0 for global aliases) whose aliases changed."""
    found = connection.execute(
        text(
            "SELECT id, person_id, ifnull(chat_id, 0), alias, source FROM person_aliases "
            f"WHERE {HOLDS_INVISIBLE}(alias) ORDER BY id"
        )
    )
    scopes: set[int] = set()
    for alias_id, person, scope, alias, source in found.all():
        cleaned = clean_name(alias)
        if cleaned == alias:
            continue  # what it holds belongs to it (an emoji's joiner, a variation selector)
        scopes.add(scope)
        key = name_key(cleaned)
        if not key:
            connection.execute(text("DELETE FROM person_aliases WHERE id = :id"), {"id": alias_id})
            report.aliases_dropped += 1
            continue
        params = {"person": person, "scope": scope, "key": key, "source": source, "id": alias_id}
        same = connection.execute(_SAME_ALIAS, params).first()
        if same is None:
            connection.execute(
                text("UPDATE person_aliases SET alias = :alias, alias_key = :key WHERE id = :id"),
                {"alias": cleaned, "key": key, "id": alias_id},
            )
            report.aliases += 1
            continue
        mine = connection.execute(
            text("SELECT count, first_seen, last_seen FROM person_aliases WHERE id = :id"), {"id": alias_id}
        ).one()
        count, first_seen, last_seen = Sightings(*same[1:]).folded(Sightings(*mine)).values()
        connection.execute(
            text(
                "UPDATE person_aliases SET count = :count, first_seen = :first, last_seen = :last "
                "WHERE id = :id"
            ),
            {"count": count, "first": first_seen, "last": last_seen, "id": same[0]},
        )
        connection.execute(text("DELETE FROM person_aliases WHERE id = :id"), {"id": alias_id})
        report.aliases_folded += 1
    return scopes


def _clean_chat_names(connection: Connection, report: CleanupReport) -> Renamed:
    """Per chat, the names that change in the order they were set, so that of two that become one the
    earlier keeps it, as naming would have given it."""
    found = connection.execute(
        text(
            "SELECT chat_id, person_id, person_name, source FROM person_chat_names "
            f"WHERE {HOLDS_INVISIBLE}(person_name) ORDER BY chat_id, updated_at, person_id"
        )
    )
    renamed: Renamed = {}
    for chat, person, old, source in found.all():
        cleaned = clean_name(old)
        if cleaned == old:
            continue
        taken = connection.execute(
            text("SELECT person_name FROM person_chat_names WHERE chat_id = :chat AND person_id != :person"),
            {"chat": chat, "person": person},
        )
        others = [str(n) for (n,) in taken.all()]
        name, source = _free_name(connection, chat, person, cleaned, source, others)
        connection.execute(
            text(
                "UPDATE person_chat_names SET person_name = :name, name_key = :key, source = :source "
                "WHERE chat_id = :chat AND person_id = :person"
            ),
            {"name": name, "key": name_key(name), "source": source, "chat": chat, "person": person},
        )
        renamed[(chat, person)] = (old, name)
    report.chat_names = len(renamed)
    return renamed


def _free_name(
    connection: Connection, chat: int, person: int, cleaned: str, source: str, taken: list[str]
) -> tuple[str, str]:
    """The name (and its source) naming gives a person whose name there cleaned to `cleaned`."""
    who = _who(connection, chat, person)
    if not name_key(cleaned):  # nothing left: named again as on their first message
        first = first_card_name(who["card"])
        name = choose_person_name(first, who["nickname"], who["user_id"], taken)
        return name, name_source(first, who["nickname"])
    if name_key(cleaned) not in {name_key(t) for t in taken}:
        return cleaned, source
    # Another member has it: the suffix naming gives the later of two (the cleaned name fits as it was).
    limit = max(DEFAULT_MAX_CHARS, len(cleaned))
    return choose_person_name(cleaned, None, who["user_id"], taken, max_chars=limit), source


def _who(connection: Connection, chat: int, person: int) -> dict[str, Any]:
    """The person's (cleaned) card in the chat, nickname and platform user id."""
    row = connection.execute(
        text(
            "SELECT p.platform_user_id, p.nickname, m.card FROM persons p "
            "LEFT JOIN chat_members m ON m.person_id = p.id AND m.chat_id = :chat WHERE p.id = :person"
        ),
        {"chat": chat, "person": person},
    ).first()
    if row is None:
        return {"user_id": str(person), "nickname": "", "card": ""}
    return {"user_id": str(row[0]), "nickname": str(row[1] or ""), "card": str(row[2] or "")}


def _clean_person_names(connection: Connection, renamed: Renamed, report: CleanupReport) -> None:
    """A person's first name (the name they were first given in a chat) follows that name; one left
    with nothing is unset (NULL), as before their first naming."""
    found = connection.execute(
        text(f"SELECT id, person_name FROM persons WHERE {HOLDS_INVISIBLE}(person_name)")
    )
    changes = []
    for person, old in found.all():
        now = next((new for (_, p), (was, new) in renamed.items() if p == person and was == old), None)
        if now is None:
            cleaned = clean_name(old)
            now = cleaned if name_key(cleaned) else None
        if now != old:
            changes.append({"id": person, "name": now})
    if changes:
        connection.execute(text("UPDATE persons SET person_name = :name WHERE id = :id"), changes)
    report.person_names = len(changes)
