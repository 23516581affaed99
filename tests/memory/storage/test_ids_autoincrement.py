"""Migration 0022_ids_autoincrement: ids are never handed out twice in the tables whose ids people see or
other rows keep (SQLite gives a new row the id of a deleted highest row otherwise)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.orm import Session

from memory.models import (
    Base,
    Chat,
    ChatHistory,
    ForgetLogEntry,
    Jargon,
    JargonEvidence,
    JargonReview,
    Person,
    PersonFact,
    PersonTimelineEntry,
    PreferenceDoc,
    TopicCacheEntry,
)
from memory.storage import Database, migrate
from memory.storage import compact as compact_module
from memory.storage.database import DB_FILENAME, DatabaseUnavailable

BEFORE = "0021_chat_history_autoincrement"
AFTER = "0022_ids_autoincrement"
BRANCHES = ("0003_history_extras", "0003_persons", "0004_jargon")
# The tables 0022 rebuilds, with chat_history (0021): every one whose ids people see or other rows keep.
TABLES = (
    "messages",
    "chats",
    "persons",
    "jargon",
    "person_facts",
    "topic_cache",
    "forget_log",
    "preference_docs",
)
# Ids that rows of other tables (or logs, JSON lists, id floors) still name for a table, past its rows.
NAMED_ELSEWHERE = {"messages": 50, "chats": 20, "persons": 40, "jargon": 30, "preference_docs": 9}


def _fill(session: Session) -> None:
    """Two rows in each table of TABLES, and rows elsewhere naming ids past them (NAMED_ELSEWHERE)."""
    chats = [
        Chat(id=n, platform="qq", platform_chat_id=f"g{n}", name=f"群{n}", created_at=0.0) for n in (1, 2)
    ]
    people = [
        Person(
            id=n, platform="qq", platform_user_id=f"u{n}", nickname=f"小{n}", first_seen=0.0, last_seen=0.0
        )
        for n in (1, 2)
    ]
    session.add_all([*chats, *people])
    session.flush()
    texts = {1: "周末去露营吗", 2: "hike the trail 爬山", 3: "晚上吃火锅"}
    # In SQL: the model has columns later revisions added (0023's `forwarded`) that 0021 has not.
    for n, body in texts.items():
        session.connection().exec_driver_sql(
            "INSERT INTO messages(id, chat_id, platform_message_id, person_id, sender_name, sender_card, "
            "text, segments, mentions, time, utc_offset_minutes, is_bot, to_bot) "
            "VALUES (?, 1, ?, 1, '', '', ?, '[]', '[]', ?, 0, 0, 0)",
            (n, f"m{n}", body, float(n)),
        )
    session.add_all(
        [
            Jargon(id=n, chat_id=1, content=f"词{n}", normalized=f"词{n}", created_at=0.0, updated_at=0.0)
            for n in (1, 2)
        ]
        + [JargonEvidence(jargon_id=1, message_id=n, chat_id=1) for n in (1, 2)]
        + [JargonReview(jargon_id=30, actor="admin", action="delete", time=0.0)]
        + [PersonFact(id=n, person_id=1, chat_id=1, key=f"k{n}", value="v", time=0.0) for n in (1, 2)]
        + [
            TopicCacheEntry(
                id=n, chat_id=1, participants=[1, 40] if n == 2 else [1], created_at=0.0, updated_at=0.0
            )
            for n in (1, 2)
        ]
        + [
            ForgetLogEntry(
                id=n, chat_history_id=n, chat_id=20 if n == 2 else 1, theme="t", stage=1, count=0, time=0
            )
            for n in (1, 2)
        ]
        + [
            PreferenceDoc(id=n, chat_id=1, message_id=n, kind="habit", text="我一般早起", time=0.0)
            for n in (1, 2)
        ]
        + [PersonTimelineEntry(person_id=1, chat_id=1, time=0.0, text="搬家", message_ids=[2, 50])]
        + [
            ChatHistory(
                chat_id=1,
                theme="露营",
                participants=[{"person_id": 2, "user_id": "u2"}],
                start_time=0.0,
                end_time=1.0,
                source_message_ids=[1, 2],
                created_at=0.0,
            )
        ]
    )
    session.flush()
    for rowid, body in texts.items():
        session.connection().exec_driver_sql(
            "INSERT INTO messages_fts(rowid, body) VALUES (?, ?)", (rowid, " ".join(body))
        )
    session.connection().exec_driver_sql("INSERT INTO preference_fts(rowid, body) VALUES (9, '早 起')")
    session.connection().exec_driver_sql("INSERT INTO id_floors(name, value) VALUES ('chats', 20)")


def _dump(connection: Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the rebuilt tables and of tables naming their ids, and every index and trigger."""
    rows = {
        table: [tuple(row) for row in connection.exec_driver_sql(f"SELECT * FROM {table} ORDER BY id")]
        for table in (*TABLES, "chat_history", "jargon_evidence", "person_timeline")
    }
    schema = connection.exec_driver_sql(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('index', 'trigger') ORDER BY name"
    )
    return {**rows, "schema": [tuple(row) for row in schema]}


@pytest.fixture
def at_0021(tmp_path: Path) -> Iterator[Path]:
    """A database at 0021 holding rows in every table 0022 rebuilds (the data directory's file)."""
    path = tmp_path / DB_FILENAME
    engine = _engine(path)
    try:
        with engine.begin() as connection:
            config = migrate.alembic_config()
            config.attributes["connection"] = connection
            for revision in (*BRANCHES, BEFORE):  # what `heads` was before 0022
                command.upgrade(config, revision)
            with Session(bind=connection) as session:
                _fill(session)
    finally:
        engine.dispose()
    yield path


def _engine(path: Path) -> Engine:
    return create_engine(f"sqlite:///{path}")


def _reinsert_highest(connection: Connection, table: str) -> tuple[int, int]:
    """Delete the table's highest row and insert it again without its id: (old id, new id)."""
    row = connection.exec_driver_sql(f"SELECT * FROM {table} ORDER BY id DESC LIMIT 1").mappings().one()
    connection.exec_driver_sql(f"DELETE FROM {table} WHERE id = ?", (row["id"],))
    columns = [name for name in row if name != "id"]
    connection.exec_driver_sql(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        tuple(row[name] for name in columns),
    )
    return int(row["id"]), int(connection.exec_driver_sql("SELECT last_insert_rowid()").scalar_one())


@pytest.mark.parametrize("table", TABLES)
def test_a_deleted_highest_id_is_handed_out_again_before_0022_and_never_after(
    at_0021: Path, table: str
) -> None:
    engine = _engine(at_0021)
    try:
        with engine.begin() as connection:
            old, new = _reinsert_highest(connection, table)
        assert new == old, "before 0022 SQLite reuses the id (what this test shows the migration fixes)"
        migrate.upgrade(at_0021)
        with engine.begin() as connection:
            old, new = _reinsert_highest(connection, table)
        assert new == max(old, NAMED_ELSEWHERE.get(table, 0)) + 1
    finally:
        engine.dispose()


def test_the_upgrade_keeps_rows_ids_references_triggers_and_full_text_search(at_0021: Path) -> None:
    engine = _engine(at_0021)
    try:
        with engine.connect() as connection:
            before = _dump(connection)
        with engine.begin() as connection:
            config = migrate.alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, AFTER)  # not past it: later revisions add columns to these rows
            assert _dump(connection) == before
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
            assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []
            found = connection.exec_driver_sql(
                "SELECT m.id, m.text FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                "WHERE messages_fts MATCH '\"火\"'"
            ).all()
            assert [tuple(r) for r in found] == [(3, "晚上吃火锅")]
            # The nickname trigger on persons (0018) survives the rebuild and still fires.
            connection.exec_driver_sql("UPDATE persons SET nickname = '改名' WHERE id = 1")
            version = connection.exec_driver_sql(
                "SELECT version FROM person_alias_versions WHERE chat_id = 0"
            )
            assert version.scalar_one() == 1
            sequences = dict(connection.exec_driver_sql("SELECT name, seq FROM sqlite_sequence").all())
        assert {table: sequences[table] for table in NAMED_ELSEWHERE} == NAMED_ELSEWHERE
        assert {table: sequences[table] for table in TABLES if table not in NAMED_ELSEWHERE} == {
            table: 2 for table in TABLES if table not in NAMED_ELSEWHERE
        }
    finally:
        engine.dispose()


def _autoincrement_tables(connection: Connection) -> set[str]:
    rows = connection.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'").all()
    return {name for name, sql in rows if sql and "AUTOINCREMENT" in sql.upper()}


def test_the_migrations_and_the_models_agree_on_which_tables_never_reuse_ids(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    migrate.upgrade(path)
    modelled = {
        name for name, table in Base.metadata.tables.items() if table.kwargs.get("sqlite_autoincrement")
    }
    engine = _engine(path)
    try:
        with engine.connect() as connection:
            assert _autoincrement_tables(connection) == modelled == {*TABLES, "chat_history"}
    finally:
        engine.dispose()


def test_downgrade_to_0021_keeps_rows_and_triggers(at_0021: Path) -> None:
    migrate.upgrade(at_0021)
    engine = _engine(at_0021)
    try:
        with engine.begin() as connection:
            config = migrate.alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, AFTER)  # the columns later revisions add are not 0022's to keep
            before = _dump(connection)
            command.downgrade(config, BEFORE)
            assert _autoincrement_tables(connection) == {"chat_history"}
            assert _dump(connection) == before
            triggers = connection.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'trigger'"
            ).all()
            assert [tuple(t) for t in triggers] == [("persons_nickname_version",)]
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
    finally:
        engine.dispose()
    migrate.upgrade(at_0021)


async def test_too_little_free_disk_is_a_clear_error_and_leaves_the_database_at_0021(
    at_0021: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full disk cannot be made here: the free space the check reads is what is faked.
    monkeypatch.setattr(compact_module, "free_space", lambda folder: 4096)
    with pytest.raises(
        DatabaseUnavailable, match=r"too little free disk to upgrade its schema.*bytes needed"
    ):
        await Database.open(at_0021.parent)
    engine = _engine(at_0021)
    try:
        with engine.connect() as connection:
            versions = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
            assert BEFORE in versions and "0022_ids_autoincrement" not in versions
            assert connection.exec_driver_sql("SELECT count(*) FROM messages").scalar_one() == 3
    finally:
        engine.dispose()
    monkeypatch.undo()
    db = await Database.open(at_0021.parent)
    await db.close()
