"""The cleaning run: its passes in order (each reads what the earlier ones wrote) and its report."""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import asdict, dataclass

from sqlalchemy import Connection

from memory.name_cleanup import histories, people, raw, timeline, topics
from memory.name_cleanup.sql import HOLDS_INVISIBLE
from memory.text import holds_invisible

log = logging.getLogger(__name__)


@dataclass(slots=True)
class CleanupReport:
    """How many rows each pass changed."""

    messages: int = 0  # sender name or card cleaned
    message_vectors: int = 0  # dropped: their turn window names a cleaned sender (embedded again)
    chats: int = 0
    nicknames: int = 0
    cards: int = 0  # members' current group cards
    aliases: int = 0  # cleaned in place
    aliases_folded: int = 0  # became another alias of the person and folded into it
    aliases_dropped: int = 0  # nothing a person could be called by was left
    chat_names: int = 0  # the names the bot uses, per chat
    person_names: int = 0
    timeline: int = 0  # lines rewritten
    timeline_dropped: int = 0  # changes that are no change once cleaned
    histories: int = 0
    histories_unread: int = 0  # verbatim text not made of their messages' lines: left as it was
    history_vectors: int = 0  # dropped: their offline summary named a cleaned speaker (embedded again)
    histories_model_text: int = 0  # the model's digest names a speaker by a name now cleaned: kept as written
    topic_states: int = 0  # chats whose topic check knew speakers by names now cleaned

    @property
    def changed(self) -> bool:
        """Whether any row was changed."""
        return any(asdict(self).values())

    def summary(self) -> str:
        """One line for the log: the counts that are not zero."""
        changed = [f"{name.replace('_', ' ')} {count}" for name, count in asdict(self).items() if count]
        return "stored names cleaned: " + (", ".join(changed) if changed else "nothing to change")


def clean_stored_names(connection: Connection) -> CleanupReport:
    """Clean every stored name (see the package docstring) inside the connection's transaction."""
    report = CleanupReport()
    _register_functions(connection)
    changed = raw.clean_messages(connection, report)
    raw.clean_chats(connection, report)
    raw.clean_nicknames(connection, report)
    raw.clean_cards(connection, report)
    renamed = people.clean_people(connection, report)
    timeline.clean_timeline(connection, report)
    histories.clean_histories(connection, changed, renamed, report)
    topics.clean_topic_states(connection, report)
    # A new database passes through this revision too: only a cleaning that changed something is news.
    log.log(logging.INFO if report.changed else logging.DEBUG, report.summary())
    return report


def _register_functions(connection: Connection) -> None:
    """`HOLDS_INVISIBLE(text)` in this connection's SQL, so rows are picked in one scan each without
    reading every name into Python. It stays registered (SQLite refuses to drop a function its cached
    statements use) and goes with the connection, which the upgrade closes."""
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)

    def holds(value: object) -> bool:
        return isinstance(value, str) and holds_invisible(value)

    driver.create_function(HOLDS_INVISIBLE, 1, holds, deterministic=True)
