"""The declarative base with a constraint naming convention Alembic can rely on."""

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# A model's `__table_args__` entry for a table whose ids are never handed out twice (SQLite
# `AUTOINCREMENT`; migrations 0021_chat_history_autoincrement and 0022_ids_autoincrement): its ids are
# shown to people or kept by other rows, so a new row must not get the id of a deleted highest one.
IDS_NEVER_REUSED: dict[str, bool] = {"sqlite_autoincrement": True}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
