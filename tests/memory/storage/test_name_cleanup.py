"""Migration 0016_clean_stored_names: names stored before Qunyi dropped the characters that show
nothing are brought to what today's code stores, with what is derived from them; a clean database is
left as it was."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection

from memory.context.render import forward_marked
from memory.history import pack_entry
from memory.history.pack import PackOptions, index_body, transcript_line
from memory.history.source import by_ids
from memory.messages import sent_at
from memory.models import ChatHistory
from memory.name_cleanup import histories
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import migrate
from memory.text import index_text
from memory.topics import cache
from tests.conftest import T0
from tests.memory.persons.people_fixtures import Chat
from tests.memory.storage.test_migrations import schema_at

BEFORE = "0015_embeddings_chat_space"
ZWSP, FILLER, SOFT_HYPHEN, RLO, PDF = "\u200b", "\u3164", "\u00ad", "\u202e", "\u202c"
FAMILY = "👨\u200d👩\u200d👧"  # an emoji sequence: its joiners stay
GE = "葛\U000e0100"  # an ideographic variant of 葛: the selector stays
ENGLAND = "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # a flag: its tags stay
OFFSET = 480  # UTC+8, as the messages were sent

MESSAGES = [  # id, chat, person, sender name, card, text, time
    (1, 1, 2, "阿明", "明哥", f"大家好{ZWSP}!", 100.0),
    (2, 1, 2, FILLER, FILLER, "我来了", 200.0),
    (3, 1, 1, f"小{ZWSP}红", f"小{ZWSP}红｜前端", f"hi {RLO}there", 300.0),
    (4, 1, 3, f"Dad {FAMILY} Jr", "", "周末去爬山", 400.0),
    (5, 1, 4, f"{GE}优", "", "好的", 500.0),
    (6, 1, 2, "阿明", "明哥2", "换个名片", 600.0),
    (7, 2, 5, f"小红{SOFT_HYPHEN}", "", "你好", 700.0),
]
# What packing wrote, when the bot called u2 FILLER and u1 小<ZWSP>红 in chat 1.
PACKED_NAMES = {1: FILLER, 2: FILLER, 3: f"小{ZWSP}红"}
# An offline digest of messages 1-3 under those names (offline_digest: the speakers' lines, the speakers
# in （、）; key points the speakers' lines), and the same once cleaned.
DIGESTS = [
    (
        f"{FILLER}: 大家好{ZWSP}! / 小{ZWSP}红: hi {RLO}there（{FILLER}、小{ZWSP}红）",
        [f"{FILLER}: 大家好{ZWSP}!", f"{FILLER}: 我来了", f"小{ZWSP}红: hi {RLO}there"],
    ),
    (f"小{ZWSP}红: 大家好（{FILLER}、小{ZWSP}红", [f"{FILLER}: 我来了"]),  # a model's
    (
        f"明哥2: 大家好{ZWSP}! / 小红: hi {RLO}there（明哥2、小红）",
        [f"明哥2: 大家好{ZWSP}!", "明哥2: 我来了", f"小红: hi {RLO}there"],
    ),
]


def _line(message_id: int, name: str, forwarded: bool = False) -> str:
    _, _, _, _, _, text, time = MESSAGES[message_id - 1]
    return transcript_line(sent_at(time, OFFSET), name, text, forwarded)


def _insert(connection: Connection, table: str, rows: list[tuple[Any, ...]]) -> None:
    marks = ", ".join("?" * len(rows[0]))
    connection.exec_driver_sql(f"INSERT INTO {table} VALUES ({marks})", rows)


def _dirty_database(path: Path) -> None:
    """A database at the revision before, written by a Qunyi that kept hidden characters in names."""
    with schema_at(path, BEFORE) as connection:
        _insert(
            connection,
            "chats",
            [
                (1, "qq", "100", "group", f"{RLO}技术群{PDF}", 0.0),
                (2, "qq", "200", "group", FILLER, 0.0),
                (3, "qq", "300", "group", f"家庭{FAMILY}", 0.0),
            ],
        )
        _insert(
            connection,
            "persons",
            [
                (1, "qq", "u1", f"小{ZWSP}红", f"小{ZWSP}红", 0, 0.0, 0.0, 1),
                (2, "qq", "u2", FILLER, FILLER, 0, 0.0, 0.0, 3),
                (3, "qq", "u3", f"Dad {FAMILY} Jr", "Dad", 0, 0.0, 0.0, 1),
                (4, "qq", "u4", f"{GE}优", f"{GE}优", 0, 0.0, 0.0, 1),
                (5, "qq", "u5555", f"小红{SOFT_HYPHEN}", f"小红{FILLER}", 0, 0.0, 0.0, 1),
                (6, "qq", "u6", f"Tom{ENGLAND}Lee", "Tom", 0, 0.0, 0.0, 0),
            ],
        )
        _insert(
            connection,
            "chat_members",
            [
                (1, 1, f"小{ZWSP}红｜前端", 0.0, 300.0, 1),
                (1, 2, FILLER, 0.0, 600.0, 3),
                (1, 3, "", 0.0, 400.0, 1),
                (1, 4, "", 0.0, 500.0, 1),
                (1, 5, "", 0.0, 0.0, 0),
                (2, 5, "", 0.0, 700.0, 1),
            ],
        )
        for message_id, chat, person, name, card, body, time in MESSAGES:
            connection.exec_driver_sql(
                "INSERT INTO messages (id, chat_id, platform_message_id, person_id, sender_name, "
                "sender_card, text, segments, reply_to, mentions, time, utc_offset_minutes, is_bot, to_bot) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, '[]', NULL, '[]', ?, ?, 0, 0)",
                (message_id, chat, f"m{message_id}", person, name, card, body, time, OFFSET),
            )
            connection.exec_driver_sql(
                "INSERT INTO messages_fts (rowid, body) VALUES (?, ?)", (message_id, index_text(body))
            )
        vectors = [(i, "message", i, MESSAGES[i - 1][1], "m", 1, b"\0\0\x80?", 0.0) for i in range(1, 8)]
        topics = [(8 + i, "history", ref, 1, "m", 1, b"\0\0\x80?", 0.0) for i, ref in enumerate((1, 4, 5))]
        _insert(connection, "embeddings", [*vectors, *topics])
        _insert(
            connection,
            "person_aliases",
            [
                (1, 1, None, f"小{ZWSP}红", "小红", "nickname", 1.0, 2, 10.0, 20.0, None),
                (2, 1, 1, f"小红{FILLER}", f"小红{FILLER}", "card", 1.0, 1, 5.0, 50.0, 3),
                (3, 1, 1, "小红", "小红", "card", 1.0, 3, 30.0, 40.0, None),
                (4, 2, 1, FILLER, FILLER, "card", 1.0, 1, 200.0, 200.0, 2),
                (5, 3, None, f"Dad {FAMILY} Jr", "dadjr", "nickname", 1.0, 1, 400.0, 400.0, 4),
                (6, 4, None, f"{GE}优", "葛优", "nickname", 1.0, 1, 500.0, 500.0, 5),
                (7, 5, None, f"小{SOFT_HYPHEN}红", "小红", "nickname", 1.0, 1, 700.0, 700.0, 7),
                (8, 2, None, f"阿{ZWSP}明", "阿明", "self", 0.9, 1, 1.0, 2.0, 1),
                (9, 2, None, f"阿明{FILLER}", f"阿明{FILLER}", "self", 0.9, 2, 3.0, 4.0, None),
            ],
        )
        _insert(
            connection,
            "person_chat_names",
            [
                (1, 1, f"小{ZWSP}红", "小红", "card", "", 1.0),
                (1, 2, FILLER, FILLER, "card", "", 2.0),
                (1, 3, "Dad", "dad", "nickname", "", 3.0),
                (1, 5, f"小红{FILLER}", f"小红{FILLER}", "card", "", 4.0),
                (1, 4, f"{GE}优", "葛优", "nickname", "", 5.0),
            ],
        )
        _insert(
            connection,
            "person_timeline",
            [
                (1, 2, 1, 200.0, "card", f"群名片改为「{FILLER}」(原「明哥」)", "[2]"),
                (2, 2, 1, 600.0, "card", f"群名片改为「明哥2」(原「{FILLER}」)", "[6]"),
                (3, 1, 1, 300.0, "card", f"群名片改为「小{ZWSP}红｜前端」(原「小红」)", "[3]"),
                (4, 5, 1, 700.0, "card", f"群名片改为「小红{FILLER}」(原「小红」)", "[7]"),
                (5, 2, 1, 100.0, "alias", f"自称「阿{ZWSP}明」", "[1]"),
                (6, 2, 1, 100.0, "alias", f"被叫作「{FILLER}」", "[1]"),
                (7, 1, 1, 300.0, "event", f"去了{ZWSP}北京", "[3]"),
                (8, 4, 1, 500.0, "alias", f"自称「{GE}优」", "[5]"),
            ],
        )
        _insert(connection, "person_alias_versions", [(0, 5), (1, 7)])
        names = {"u1": ["u1", f"小{ZWSP}红"], "u2": ["u2", FILLER], "u3": [f"dad {FAMILY} jr", "u3"]}
        state = {"disentangler": {"version": 1, "window": [], "names": names, "docs": 0}, "kept": FILLER}
        _insert(
            connection,
            "job_state",
            [("topic_check", 1, 7, 0.0, json.dumps(state)), ("jargon_mining", 1, 7, 0.0, json.dumps(names))],
        )
        people = [
            {"person_id": 2, "user_id": "u2", "name": FILLER, "messages": 2, "is_bot": False},
            {"person_id": 1, "user_id": "u1", "name": f"小{ZWSP}红", "messages": 1, "is_bot": False},
        ]
        clean_people = [
            {"person_id": 3, "user_id": "u3", "name": "Dad", "messages": 1, "is_bot": False},
            {"person_id": 4, "user_id": "u4", "name": f"{GE}优", "messages": 1, "is_bot": False},
        ]
        histories = [
            (1, "\n".join(_line(i, PACKED_NAMES[i]) for i in (1, 2, 3)), people, [1, 2, 3]),
            (2, "\n".join([_line(4, "Dad"), _line(5, f"{GE}优")]), clean_people, [4, 5]),
            (3, f"not lines of its messages {ZWSP}", people, [4]),  # written by no packing
        ]
        for history_id, original, participants, sources in histories:
            connection.exec_driver_sql(
                "INSERT INTO chat_history (id, chat_id, theme, keywords, summary, key_points, original_text, "
                "participants, start_time, end_time, source_message_ids, count, forget_times, provenance, "
                "created_at) VALUES (?, 1, '打招呼', '[\"大家\"]', '见面', '[]', ?, ?, 0, 0, ?, 0, 0, "
                "'offline', 0)",
                (history_id, original, json.dumps(participants), json.dumps(sources)),
            )
            body = "\n".join(["打招呼", "大家", "见面", original])
            connection.exec_driver_sql(
                "INSERT INTO chat_history_fts (rowid, body) VALUES (?, ?)", (history_id, index_text(body))
            )
        for history_id, (summary, points), provenance in zip(
            (4, 5), DIGESTS[:2], ("offline", "llm"), strict=True
        ):
            connection.exec_driver_sql(
                "INSERT INTO chat_history (id, chat_id, theme, keywords, summary, key_points, original_text, "
                "participants, start_time, end_time, source_message_ids, count, forget_times, provenance, "
                "created_at) VALUES (?, 1, '打招呼', '[\"大家\"]', ?, ?, ?, ?, 0, 0, '[1,2,3]', 0, 0, ?, 0)",
                (history_id, summary, json.dumps(points), histories[0][1], json.dumps(people), provenance),
            )


def _read(path: Path) -> Callable[[str], list[tuple[Any, ...]]]:
    def rows(sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(path) as connection:
            return [tuple(row) for row in connection.execute(sql)]

    return rows


@pytest.fixture
def upgraded(tmp_path: Path) -> Callable[[str], list[tuple[Any, ...]]]:
    path = tmp_path / "q.db"
    _dirty_database(path)
    migrate.upgrade(path)
    return _read(path)


def test_senders_and_chat_names_are_cleaned_and_message_text_is_kept(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    assert upgraded("SELECT id, sender_name, sender_card, text FROM messages ORDER BY id") == [
        (1, "阿明", "明哥", f"大家好{ZWSP}!"),
        (2, "", "", "我来了"),  # nothing but a filler: no name, as a platform leaving it out
        (3, "小红", "小红｜前端", f"hi {RLO}there"),
        (4, f"Dad {FAMILY} Jr", "", "周末去爬山"),
        (5, f"{GE}优", "", "好的"),
        (6, "阿明", "明哥2", "换个名片"),
        (7, "小红", "", "你好"),
    ]
    assert upgraded("SELECT id, name FROM chats ORDER BY id") == [
        (1, "技术群"),
        (2, ""),
        (3, f"家庭{FAMILY}"),
    ]


def test_a_nickname_or_card_of_nothing_gives_way_to_the_latest_real_one(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    assert upgraded("SELECT id, nickname FROM persons ORDER BY id") == [
        (1, "小红"),
        (2, "阿明"),  # their latest message's name
        (3, f"Dad {FAMILY} Jr"),
        (4, f"{GE}优"),
        (5, "小红"),
        (6, f"Tom{ENGLAND}Lee"),
    ]
    assert upgraded("SELECT chat_id, person_id, card FROM chat_members ORDER BY 1, 2") == [
        (1, 1, "小红｜前端"),
        (1, 2, "明哥2"),  # their latest card in the chat
        (1, 3, ""),
        (1, 4, ""),
        (1, 5, ""),
        (2, 5, ""),
    ]


def test_aliases_are_cleaned_folded_or_dropped(upgraded: Callable[[str], list[tuple[Any, ...]]]) -> None:
    rows = upgraded(
        "SELECT id, person_id, chat_id, alias, alias_key, source, count, first_seen, last_seen "
        "FROM person_aliases ORDER BY id"
    )
    assert rows == [
        (1, 1, None, "小红", "小红", "nickname", 2, 10.0, 20.0),
        # 2 was 小红<filler> in the same chat and source as 3: folded into it, counts added
        (3, 1, 1, "小红", "小红", "card", 4, 5.0, 50.0),
        # 4, a card of nothing but a filler, is gone
        (5, 3, None, f"Dad {FAMILY} Jr", "dadjr", "nickname", 1, 400.0, 400.0),
        (6, 4, None, f"{GE}优", "葛优", "nickname", 1, 500.0, 500.0),
        (7, 5, None, "小红", "小红", "nickname", 1, 700.0, 700.0),
        (8, 2, None, "阿明", "阿明", "self", 3, 1.0, 4.0),  # 9 (阿明<filler>) folded into it
    ]
    assert upgraded("SELECT chat_id, version FROM person_alias_versions ORDER BY 1") == [(0, 6), (1, 8)]


def test_names_the_bot_uses_stay_unique_and_one_of_nothing_is_chosen_again(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    assert upgraded(
        "SELECT chat_id, person_id, person_name, name_key, source FROM person_chat_names ORDER BY 2"
    ) == [
        (1, 1, "小红", "小红", "card"),
        (1, 2, "明哥2", "明哥2", "card"),  # from their (recovered) card, as on a first message
        (1, 3, "Dad", "dad", "nickname"),
        (1, 4, f"{GE}优", "葛优", "nickname"),
        (1, 5, "小红#5555", "小红5555", "card"),  # 小红 was person 1's first: the id suffix naming gives
    ]
    assert upgraded("SELECT id, person_name FROM persons ORDER BY id") == [
        (1, "小红"),
        (2, "明哥2"),
        (3, "Dad"),
        (4, f"{GE}优"),
        (5, "小红#5555"),
        (6, "Tom"),
    ]


def test_timeline_lines_follow_the_names(upgraded: Callable[[str], list[tuple[Any, ...]]]) -> None:
    assert upgraded("SELECT id, text FROM person_timeline ORDER BY id") == [
        # 1: a card of nothing is no change
        (2, "群名片改为「明哥2」(原「明哥」)"),  # the card before the filler one
        (3, "群名片改为「小红|前端」(原「小红」)"),  # NFKC, as the observer writes cards
        # 4: 小红<filler> after 小红 is no change; 6: a name of nothing was never declared
        (5, "自称「阿明」"),
        (7, f"去了{ZWSP}北京"),  # not a name: as it was
        (8, f"自称「{GE}优」"),
    ]


def test_topic_text_participants_and_index_follow_the_names(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    rows = {r[0]: r[1:] for r in upgraded("SELECT id, original_text, participants FROM chat_history")}
    original, participants = rows[1]
    assert original == "\n".join([_line(1, "明哥2"), _line(2, "明哥2"), _line(3, "小红")])
    assert f"大家好{ZWSP}!" in original and f"hi {RLO}there" in original  # the messages as sent
    assert [(p["person_id"], p["name"]) for p in json.loads(participants)] == [(2, "明哥2"), (1, "小红")]
    expected = ChatHistory(
        theme="打招呼", keywords=["大家"], summary="见面", key_points=[], original_text=original
    )
    fts = dict(upgraded("SELECT rowid, body FROM chat_history_fts"))
    assert fts[1] == index_text(index_body(expected))
    clean = "\n".join([_line(4, "Dad"), _line(5, f"{GE}优")])
    assert rows[2][0] == clean and fts[2] == index_text("\n".join(["打招呼", "大家", "见面", clean]))
    assert rows[3][0] == f"not lines of its messages {ZWSP}", (
        "text not packed from its messages is left alone"
    )


def test_offline_summaries_and_key_points_follow_the_names(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    """An offline digest is made of the speakers' names: they were left as packing wrote them, so a topic
    read 'ㅤ: 大家好 / 小<ZWSP>红: hi（ㅤ、小<ZWSP>红）' beside its cleaned text."""
    rows = {r[0]: r[1:] for r in upgraded("SELECT id, summary, key_points, original_text FROM chat_history")}
    summary, points, original = rows[4]
    assert (summary, json.loads(points)) == DIGESTS[2]
    assert original == rows[1][2]
    expected = ChatHistory(
        theme="打招呼", keywords=["大家"], summary=summary, key_points=DIGESTS[2][1], original_text=original
    )
    assert dict(upgraded("SELECT rowid, body FROM chat_history_fts"))[4] == index_text(index_body(expected))
    assert (rows[5][0], json.loads(rows[5][1])) == DIGESTS[1], "a model's summary is its own text"
    assert rows[5][2] == original


def _digest(
    line: str, name: str, person: tuple[int, str], filler_messages: int = 1
) -> tuple[str, list[str], list[dict[str, Any]]]:
    """An offline digest (summary, key points, participants) of message 1 by u2, then `line` by `name`
    (`person`: its id and user id)."""
    first = f"{FILLER}: 大家好{ZWSP}!"
    people = [
        {"person_id": 2, "user_id": "u2", "name": FILLER, "messages": filler_messages, "is_bot": False},
        {"person_id": person[0], "user_id": person[1], "name": name, "messages": 1, "is_bot": False},
    ]
    return f"{first} / {line}（{FILLER}、{name}）", [first, line], people


def _offline_topic(
    connection: Connection,
    sources: list[int],
    original: str,
    summary: str,
    points: list[str],
    people: list[dict[str, Any]],
) -> None:
    """Topic 6 of chat 1, packed offline from messages `sources`, as the revision before stores it."""
    connection.exec_driver_sql(
        "INSERT INTO chat_history (id, chat_id, theme, keywords, summary, key_points, original_text, "
        "participants, start_time, end_time, source_message_ids, count, forget_times, provenance, "
        "created_at) VALUES (6, 1, '打招呼', '[\"大家\"]', ?, ?, ?, ?, 0, 0, ?, 0, 0, 'offline', 0)",
        (summary, json.dumps(points), original, json.dumps(people), json.dumps(sources)),
    )


def _upgraded_topic(path: Path) -> tuple[Any, ...]:
    """The database upgraded, then topic 6's text, participants, summary and key points."""
    migrate.upgrade(path)
    [row] = _read(path)(
        "SELECT original_text, participants, summary, key_points FROM chat_history WHERE id = 6"
    )
    return row


def test_a_forward_keeps_its_mark_when_its_speaker_is_renamed(tmp_path: Path) -> None:
    """A topic packed since forwards are marked (messages 2 and 3 forwards; a database taken back to
    this revision runs it again): the forwards' lines and offline digest lines are renamed with the mark
    kept before the name (ㅤ, named 明哥2 today, and 小<ZWSP>红), the other lines as before."""
    path = tmp_path / "q.db"
    _dirty_database(path)
    dirty, forward = f"小{ZWSP}红", forward_marked(f"小{ZWSP}红", True)
    original = "\n".join(
        [_line(1, FILLER), _line(2, FILLER, forwarded=True), _line(3, dirty, forwarded=True)]
    )
    with schema_at(path, BEFORE) as connection:
        digest = _digest(f"{forward}: hi {RLO}there", dirty, (1, "u1"), filler_messages=2)
        _offline_topic(connection, [1, 2, 3], original, *digest)
    text, participants, summary, points = _upgraded_topic(path)
    assert text.splitlines() == [
        _line(1, "明哥2"),
        _line(2, "明哥2", forwarded=True),
        _line(3, "小红", forwarded=True),
    ]
    assert "(forwarded) 小红: hi" in text, "the mark kept, the name after it cleaned"
    assert [p["name"] for p in json.loads(participants)] == ["明哥2", "小红"]
    assert summary == f"明哥2: 大家好{ZWSP}! / (forwarded) 小红: hi {RLO}there（明哥2、小红）"
    assert json.loads(points) == [f"明哥2: 大家好{ZWSP}!", f"(forwarded) 小红: hi {RLO}there"]


def test_the_topic_check_knows_speakers_by_their_cleaned_names(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    states = {job: json.loads(data) for job, data in upgraded("SELECT job, data FROM job_state")}
    assert states["topic_check"] == {
        "disentangler": {
            "version": 1,
            "window": [],
            "names": {"u1": ["u1", "小红"], "u2": ["u2"], "u3": [f"dad {FAMILY} jr", "u3"]},
            "docs": 0,
        },
        "kept": FILLER,  # not a speaker's name
    }
    assert states["jargon_mining"]["u2"] == ["u2", FILLER], "another job's data is not the topic check's"


def test_vectors_of_windows_showing_a_cleaned_sender_go(
    upgraded: Callable[[str], list[tuple[Any, ...]]],
) -> None:
    # 2 and 3 changed in chat 1 (their neighbours 1 and 4 embed them), 7 in chat 2.
    assert upgraded("SELECT kind, ref_id FROM embeddings ORDER BY id") == [
        ("message", 5),
        ("message", 6),
        ("history", 1),
        ("history", 5),
    ], "and that of a topic whose offline summary named a cleaned speaker"


def test_the_upgrade_reports_what_it_changed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _dirty_database(tmp_path / "q.db")
    with caplog.at_level(logging.INFO, logger="memory.name_cleanup"):
        migrate.upgrade(tmp_path / "q.db")
    assert (
        "stored names cleaned: messages 3, message vectors 5, chats 2, nicknames 3, cards 2, aliases 3, "
        "aliases folded 2, aliases dropped 1, chat names 3, person names 3, timeline 3, timeline dropped 3, "
        "histories 3, histories unread 1, history vectors 1, histories model text 1, topic states 1"
    ) in caplog.messages


def test_a_new_database_logs_no_cleaning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Every new database passes through the cleaning revision; an upgrade with nothing to clean is no
    news at the level a command shows."""
    with caplog.at_level(logging.INFO, logger="memory.name_cleanup"):
        migrate.upgrade(tmp_path / "q.db")
    assert not [m for m in caplog.messages if m.startswith("stored names cleaned")]


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but alembic_version (full-text tables through their content)."""
    with sqlite3.connect(path) as connection:
        tables = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            if name != "alembic_version" and not name.startswith("sqlite_") and "_fts_" not in name
        ]
        return {t: sorted(tuple(r) for r in connection.execute(f"SELECT rowid, * FROM {t}")) for t in tables}


async def test_a_clean_database_is_left_as_it_was(memory: MemoryService, people: PersonMemory) -> None:
    # Written by today's code: names whose hidden characters belong to them (an emoji's joiners, an
    # ideographic variant, a flag's tags), a declared name, a card change and a packed topic.
    g1 = Chat(memory, "g1")
    await g1.say("u1", "大家好", card="葛\U000e0100优｜运营", nickname=f"Dad {FAMILY} Jr")
    await g1.say("u2", "叫我阿明吧", nickname=f"Tom{ENGLAND}Lee")
    await g1.say("u1", "我换了名片", card="葛\U000e0100优｜产品", nickname=f"Dad {FAMILY} Jr")
    async with memory.db.write() as session:
        entry = cache.new_entry(1, "打招呼", T0)
        session.add(entry)
        await session.flush()
        cache.add_fragment(entry, await by_ids(session, [1, 2, 3]), ["g1-m1"], T0)
    assert (await pack_entry(memory.db, entry.id, T0 + timedelta(hours=1), None, PackOptions())) is not None
    path = memory.db.path
    await memory.db.close()
    before = _dump(path)
    assert before["chat_history"] and before["person_timeline"], "a topic and a card change to keep"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE alembic_version SET version_num = ? WHERE version_num = ?",
            (BEFORE, "0016_clean_stored_names"),
        )
    migrate.upgrade(path)
    assert _dump(path) == before


def test_a_name_from_before_a_request_to_be_forgotten_does_not_come_back(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, BEFORE) as connection:
        _insert(connection, "chats", [(1, "qq", "100", "group", "", 0.0)])
        _insert(connection, "persons", [(1, "qq", "u1", FILLER, None, 0, 0.0, 200.0, 2)])
        _insert(connection, "chat_members", [(1, 1, FILLER, 0.0, 200.0, 2)])
        for message_id, name, time in ((1, "旧名", 100.0), (2, FILLER, 200.0)):
            connection.exec_driver_sql(
                "INSERT INTO messages (id, chat_id, platform_message_id, person_id, sender_name, "
                "sender_card, text, segments, mentions, time, utc_offset_minutes, is_bot, to_bot) "
                "VALUES (?, 1, ?, 1, ?, ?, 'hi', '[]', '[]', ?, 0, 0, 0)",
                (message_id, f"m{message_id}", name, name, time),
            )
        # Forgotten at 150: what was said before is not learnt again.
        _insert(connection, "person_forgotten", [(1, 150.0, 0, None)])
    migrate.upgrade(path)
    rows = _read(path)
    assert rows("SELECT nickname FROM persons") == [("",)]
    assert rows("SELECT card FROM chat_members") == [("",)]


def test_an_interrupted_cleaning_leaves_the_names_as_they_were_and_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "q.db"
    _dirty_database(path)

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(histories, "clean_histories", interrupted)  # after messages and people are cleaned
    with pytest.raises(KeyboardInterrupt):
        migrate.upgrade(path)
    rows = _read(path)
    assert rows("SELECT sender_name FROM messages WHERE id = 3") == [(f"小{ZWSP}红",)]
    assert rows("SELECT count(*) FROM person_aliases") == [(9,)]
    assert (BEFORE,) in rows("SELECT version_num FROM alembic_version")
    monkeypatch.undo()
    migrate.upgrade(path)
    assert rows("SELECT sender_name FROM messages WHERE id = 3") == [("小红",)]
    assert rows("SELECT count(*) FROM person_aliases") == [(6,)]


def test_a_member_named_like_the_forward_mark_is_not_read_as_a_forward(tmp_path: Path) -> None:
    """A member who typed their card as "(forwarded) ㅤ" writes lines that read like a forward of someone
    called ㅤ (the forward mark before a name). The cleanup read them so: the hidden character alone
    made the name, cleaned to nothing and given the member's name of today after the mark; the line
    then showed the mark twice, and the digest's line of the member was taken for a forward of the
    other member once called ㅤ. A speaker whose own name starts like the mark is read as named so."""
    path = tmp_path / "q.db"
    _dirty_database(path)
    typed = f"(forwarded) {FILLER}"
    said = transcript_line(sent_at(800.0, OFFSET), typed, "转给大家看看", False)
    original = "\n".join([_line(1, FILLER), said])
    with schema_at(path, BEFORE) as connection:
        _insert(connection, "persons", [(7, "qq", "u7", typed, typed, 0, 0.0, 0.0, 1)])
        _insert(connection, "chat_members", [(1, 7, typed, 0.0, 800.0, 1)])
        connection.exec_driver_sql(
            "INSERT INTO messages (id, chat_id, platform_message_id, person_id, sender_name, "
            "sender_card, text, segments, reply_to, mentions, time, utc_offset_minutes, is_bot, to_bot) "
            "VALUES (8, 1, 'm8', 7, ?, ?, '转给大家看看', '[]', NULL, '[]', 800.0, ?, 0, 0)",
            (typed, typed, OFFSET),
        )
        _offline_topic(connection, [1, 8], original, *_digest(f"{typed}: 转给大家看看", typed, (7, "u7")))
    text, participants, summary, points = _upgraded_topic(path)
    [(card,)] = _read(path)("SELECT card FROM chat_members WHERE person_id = 7")
    assert card.startswith("(forwarded)") and FILLER not in card
    assert text.splitlines() == [
        _line(1, "明哥2"),
        transcript_line(sent_at(800.0, OFFSET), card, "转给大家看看", False),  # not "(forwarded) (forwarded)"
    ]
    assert [p["name"] for p in json.loads(participants)] == ["明哥2", card]
    assert summary == f"明哥2: 大家好{ZWSP}! / {card}: 转给大家看看（明哥2、{card}）"
    assert json.loads(points) == [f"明哥2: 大家好{ZWSP}!", f"{card}: 转给大家看看"]
