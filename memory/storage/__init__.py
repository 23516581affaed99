"""The database: engines, sessions, migrations and the full-text index."""

from memory.storage.database import (
    Database,
    DatabaseBehind,
    DatabaseLocked,
    DatabaseMissing,
    DatabaseUnavailable,
    DatabaseWriteFailed,
)

__all__ = [
    "Database",
    "DatabaseBehind",
    "DatabaseLocked",
    "DatabaseMissing",
    "DatabaseUnavailable",
    "DatabaseWriteFailed",
]
