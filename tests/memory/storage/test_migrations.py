from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect

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


def test_stemmed_fts_migration_keeps_indexed_rows(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        config = migrate.alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "0003_embeddings")
        connection.exec_driver_sql("INSERT INTO messages_fts(rowid, body) VALUES (7, 'we went camping')")
    migrate.upgrade(path)
    with engine.connect() as connection:
        found = connection.exec_driver_sql(
            "SELECT rowid, body FROM messages_fts WHERE messages_fts MATCH '\"camp\"'"
        ).all()
    engine.dispose()
    assert found == [(7, "we went camping")]
