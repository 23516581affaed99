"""Bring a database file to the newest schema with Alembic (all heads)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

SCRIPT_LOCATION = str(Path(__file__).parent / "migrations")


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def upgrade(path: Path) -> None:
    """Create or upgrade the schema of the SQLite file at `path` (blocking; run it in a thread)."""
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, "heads")
    finally:
        engine.dispose()
