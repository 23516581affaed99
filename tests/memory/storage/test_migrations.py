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
