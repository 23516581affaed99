from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic import command
from alembic.operations import Operations
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, inspect

from memory.models import Base
from memory.storage import migrate


def test_migrations_create_every_model_table_and_downgrade(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    migrate.upgrade(path)
    engine = create_engine(f"sqlite:///{path}")
    tables = set(inspect(engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
    assert {"messages_fts", "chat_history_fts"} <= tables
    with engine.begin() as connection:
        config = migrate.alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
    assert inspect(engine).get_table_names() == ["alembic_version"]
    engine.dispose()
    migrate.upgrade(path)


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    migrate.upgrade(tmp_path / "q.db")
    migrate.upgrade(tmp_path / "q.db")
    heads = ScriptDirectory.from_config(migrate.alembic_config()).get_heads()
    assert heads


@contextmanager
def schema_at(path: Path, revision: str) -> Iterator[Connection]:
    """A connection to a database migrated only up to `revision`; what it writes is committed."""
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            config = migrate.alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
            yield connection
    finally:
        engine.dispose()


def upgraded_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Upgrade to the newest schema, then run one query."""
    migrate.upgrade(path)
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.exec_driver_sql(sql).all()]
    finally:
        engine.dispose()


def test_stemmed_fts_migration_keeps_indexed_rows(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0003_embeddings") as connection:
        connection.exec_driver_sql("INSERT INTO messages_fts(rowid, body) VALUES (7, 'we went camping')")
    found = upgraded_rows(path, "SELECT rowid, body FROM messages_fts WHERE messages_fts MATCH '\"camp\"'")
    assert found == [(7, "we went camping")]


def test_turn_window_migration_fills_windows_for_existing_messages(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0005_stemmed_fts") as connection:
        for rowid, time, body in ((1, 0.0, "hello there"), (2, 60.0, "hi"), (3, 90_000.0, "next day")):
            connection.exec_driver_sql(
                "INSERT INTO messages(id, chat_id, platform_message_id, sender_name, sender_card, text, "
                "segments, mentions, time, utc_offset_minutes, is_bot, to_bot) "
                f"VALUES ({rowid}, 1, 'm{rowid}', 'u', '', '{body}', '[]', '[]', {time}, 0, 0, 0)"
            )
            connection.exec_driver_sql(f"INSERT INTO messages_fts(rowid, body) VALUES ({rowid}, '{body}')")
    rows = upgraded_rows(path, "SELECT rowid, body FROM message_windows_fts ORDER BY rowid")
    assert [(r, " ".join(str(b).split())) for r, b in rows] == [
        (1, "hello there hi"),
        (2, "hello there hi"),
        (3, "next day"),
    ]


def test_qq_private_chats_are_renamed_apart_from_groups(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0008_id_floors") as connection:
        for chat_id, platform, ident, kind in (
            (1, "qq", "30003", "private"),
            (2, "qq", "40004", "group"),
            (3, "telegram", "555", "private"),
        ):
            connection.exec_driver_sql(
                "INSERT INTO chats(id, platform, platform_chat_id, kind, name, created_at) "
                f"VALUES ({chat_id}, '{platform}', '{ident}', '{kind}', '', 0)"
            )
    rows = upgraded_rows(path, "SELECT id, platform_chat_id FROM chats ORDER BY id")
    assert rows == [(1, "private-30003"), (2, "40004"), (3, "555")]


@pytest.mark.parametrize(
    ("revision", "failing_statement"),
    [
        ("0005_stemmed_fts", "INSERT INTO message_windows_fts"),
        ("0003_embeddings", "INSERT INTO chat_history_fts_rebuilt"),
    ],
)
def test_an_interrupted_upgrade_leaves_the_old_revision_and_can_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, revision: str, failing_statement: str
) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, revision) as connection:
        connection.exec_driver_sql(
            "INSERT INTO messages(id, chat_id, platform_message_id, sender_name, sender_card, text, "
            "segments, mentions, time, utc_offset_minutes, is_bot, to_bot) "
            "VALUES (7, 1, 'm7', 'u', '', 'we went camping', '[]', '[]', 0, 0, 0, 0)"
        )
        connection.exec_driver_sql("INSERT INTO messages_fts(rowid, body) VALUES (7, 'we went camping')")
    execute = Operations.execute

    def interrupted(self: Operations, sql: object, *args: object, **kwargs: object) -> None:
        if str(sql).startswith(failing_statement):
            raise KeyboardInterrupt
        execute(self, sql, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Operations, "execute", interrupted)
    with pytest.raises(KeyboardInterrupt):
        migrate.upgrade(path)
    monkeypatch.setattr(Operations, "execute", execute)
    assert upgraded_rows(path, "SELECT rowid, body FROM messages_fts") == [(7, "we went camping")]
    assert upgraded_rows(path, "SELECT rowid FROM message_windows_fts") == [(7,)]


def test_a_forget_that_deleted_messages_remembers_until_when(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            config = migrate.alembic_config()
            config.attributes["connection"] = connection
            for revision in ("0003_persons", "0009_qq_private_chats"):
                command.upgrade(config, revision)
            connection.exec_driver_sql(
                "INSERT INTO person_forgotten(person_id, time, removed_messages) "
                "VALUES (1, 100.0, 3), (2, 200.0, 0)"
            )
    finally:
        engine.dispose()
    rows = upgraded_rows(path, "SELECT person_id, messages_removed_until FROM person_forgotten ORDER BY 1")
    assert rows == [(1, 100.0), (2, None)], "a forget that deleted messages did so up to its time"


def test_schema_state_says_whether_a_database_is_current(tmp_path: Path) -> None:
    def state_after(target: str) -> str:
        engine = create_engine(f"sqlite:///{tmp_path / target}.db")
        with engine.begin() as connection:
            config = migrate.alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, target)
            found = connection.exec_driver_sql("SELECT version_num FROM alembic_version")
            revisions = [row[0] for row in found]
        engine.dispose()
        return migrate.schema_state(revisions)

    newest = max(ScriptDirectory.from_config(migrate.alembic_config()).get_heads())
    assert state_after("heads") == f"up to date, newest {newest}"
    behind = state_after("0014_messages_chat_id")
    assert behind.startswith("behind") and newest not in behind


def test_history_rows_packed_before_digest_tried_are_all_due_for_a_redigest(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0016_clean_stored_names") as connection:
        connection.exec_driver_sql(
            "INSERT INTO chat_history(id, chat_id, theme, keywords, summary, key_points, original_text, "
            "participants, start_time, end_time, source_message_ids, count, forget_times, provenance, "
            "created_at) VALUES (4, 1, '露营', '[]', '', '[]', '', '[]', 0, 0, '[1, 2]', 0, 0, 'offline', 0)"
        )
    rows = upgraded_rows(path, "SELECT id, theme, digest_tried FROM chat_history")
    assert rows == [(4, "露营", None)]


HISTORY_ROW = (
    "INSERT INTO chat_history(id, chat_id, theme, keywords, summary, key_points, original_text, "
    "participants, start_time, end_time, source_message_ids, count, forget_times, provenance, created_at) "
    "VALUES ({id}, 1, '{theme}', '[]', '', '[]', '', '[]', 0, 0, '[]', 0, 0, 'offline', 0)"
)


def test_a_history_id_is_never_handed_out_twice_even_one_forgotten_before_the_upgrade(tmp_path: Path) -> None:
    """SQLite gave a new topic the id of the highest one once it was deleted: `qunyi forget --log` listed
    one id for two topics (found by the QA pass)."""
    path = tmp_path / "q.db"
    with schema_at(path, "0020_person_gap_tried_at") as connection:
        connection.exec_driver_sql(HISTORY_ROW.format(id=3, theme="露营"))
        connection.exec_driver_sql(HISTORY_ROW.format(id=9, theme="火锅"))
        connection.exec_driver_sql(
            "INSERT INTO forget_log(chat_history_id, chat_id, theme, stage, count, time) "
            "VALUES (12, 1, '爬山', 1, 0, 0)"
        )
    assert upgraded_rows(path, "SELECT id, theme FROM chat_history ORDER BY id") == [(3, "露营"), (9, "火锅")]
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(HISTORY_ROW.format(id="NULL", theme="新话题"))
            connection.exec_driver_sql("DELETE FROM chat_history WHERE theme = '新话题'")
            connection.exec_driver_sql(HISTORY_ROW.format(id="NULL", theme="又一个"))
            ids = connection.exec_driver_sql("SELECT id, theme FROM chat_history WHERE id > 9").all()
        assert [tuple(row) for row in ids] == [(14, "又一个")]
        assert {"ix_chat_history_chat_end", "ix_chat_history_forget"} <= {
            index["name"] for index in inspect(engine).get_indexes("chat_history")
        }
    finally:
        engine.dispose()


def downgraded_columns(connection: Connection, revision: str, table: str) -> set[str]:
    """Downgrade the database on `connection` to `revision`; the columns `table` has then."""
    config = migrate.alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, revision)
    return {column["name"] for column in inspect(connection).get_columns(table)}


MESSAGE_ROW = (
    "INSERT INTO messages(id, chat_id, platform_message_id, sender_name, sender_card, text, segments, "
    "mentions, time, utc_offset_minutes, is_bot, to_bot{more}) "
    "VALUES ({id}, 1, 'm{id}', 'u', '', '{text}', '[]', '[]', 0, 0, 0, 0{values})"
)


def test_messages_stored_before_0023_are_not_forwards_and_the_downgrade_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0022_ids_autoincrement") as connection:
        connection.exec_driver_sql(MESSAGE_ROW.format(id=1, text="我是素食者", more="", values=""))
        connection.exec_driver_sql(MESSAGE_ROW.format(id=2, text="I live in Berlin", more="", values=""))
    assert upgraded_rows(path, "SELECT id, text, forwarded FROM messages ORDER BY id") == [
        (1, "我是素食者", 0),
        (2, "I live in Berlin", 0),
    ]
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            row = MESSAGE_ROW.format(id=3, text="forwarded words", more=", forwarded", values=", 1")
            connection.exec_driver_sql(row)
            columns = downgraded_columns(connection, "0022_ids_autoincrement", "messages")
            assert "forwarded" not in columns and {"text", "to_bot"} <= columns
            rows = connection.exec_driver_sql("SELECT id, text FROM messages ORDER BY id").all()
            assert [tuple(row) for row in rows] == [
                (1, "我是素食者"),
                (2, "I live in Berlin"),
                (3, "forwarded words"),
            ]
            table = connection.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'messages'"
            ).scalar_one()
            assert "AUTOINCREMENT" in table.upper(), (
                "the downgrade drops the column without rebuilding the table"
            )
    finally:
        engine.dispose()
    assert upgraded_rows(path, "SELECT id, forwarded FROM messages ORDER BY id") == [(1, 0), (2, 0), (3, 0)]


def test_requests_to_be_forgotten_before_0024_have_no_message_mark_and_the_downgrade_keeps_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0023_messages_forwarded") as connection:
        connection.exec_driver_sql(
            "INSERT INTO person_forgotten(person_id, time, removed_messages, messages_removed_until) "
            "VALUES (1, 100.0, 3, 100.0), (2, 200.0, 0, NULL)"
        )
    rows = upgraded_rows(path, "SELECT person_id, time, last_message_id FROM person_forgotten ORDER BY 1")
    assert rows == [(1, 100.0, None), (2, 200.0, None)], "an older request is read by its time alone"
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO person_forgotten(person_id, time, removed_messages, last_message_id) "
                "VALUES (3, 300.0, 0, 42)"
            )
            columns = downgraded_columns(connection, "0023_messages_forwarded", "person_forgotten")
            assert "last_message_id" not in columns and "messages_removed_until" in columns
            kept = connection.exec_driver_sql("SELECT person_id, time FROM person_forgotten ORDER BY 1").all()
            assert [tuple(row) for row in kept] == [(1, 100.0), (2, 200.0), (3, 300.0)]
    finally:
        engine.dispose()


def test_messages_stored_before_0025_are_read_by_their_own_id_and_the_downgrade_keeps_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0024_forgotten_message_mark") as connection:
        connection.exec_driver_sql(MESSAGE_ROW.format(id=1, text="我住在杭州", more="", values=""))
    assert upgraded_rows(path, "SELECT id, first_id FROM messages") == [(1, None)]
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(
                MESSAGE_ROW.format(id=2, text="我住在苏州", more=", first_id", values=", 1")
            )
            columns = downgraded_columns(connection, "0024_forgotten_message_mark", "messages")
            assert "first_id" not in columns and "forwarded" in columns
            rows = connection.exec_driver_sql("SELECT id, text FROM messages ORDER BY id").all()
            assert [tuple(row) for row in rows] == [(1, "我住在杭州"), (2, "我住在苏州")]
            table = connection.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'messages'"
            ).scalar_one()
            assert "AUTOINCREMENT" in table.upper()
    finally:
        engine.dispose()


MEMBER_ROW = (
    "INSERT INTO chat_members(chat_id, person_id, card, first_seen, last_seen, message_count{more}) "
    "VALUES ({chat}, {person}, '{card}', 100.0, 200.0, 3{values})"
)


def test_memberships_stored_before_0026_are_present_and_the_downgrade_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    with schema_at(path, "0025_messages_first_id") as connection:
        for chat, person, card in ((1, 1, "红红"), (1, 2, ""), (2, 1, "Alice")):
            connection.exec_driver_sql(
                MEMBER_ROW.format(chat=chat, person=person, card=card, more="", values="")
            )
    rows = upgraded_rows(path, "SELECT chat_id, person_id, card, message_count, left_at FROM chat_members")
    assert sorted(rows) == [(1, 1, "红红", 3, None), (1, 2, "", 3, None), (2, 1, "Alice", 3, None)], (
        "every membership is kept, and none is taken for one that ended"
    )
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            left = MEMBER_ROW.format(chat=2, person=2, card="Bob", more=", left_at", values=", 300.0")
            connection.exec_driver_sql(left)
            columns = downgraded_columns(connection, "0025_messages_first_id", "chat_members")
            assert "left_at" not in columns and {"card", "last_seen"} <= columns
            kept = connection.exec_driver_sql("SELECT chat_id, person_id FROM chat_members").all()
            assert sorted(tuple(row) for row in kept) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    finally:
        engine.dispose()
