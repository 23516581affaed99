"""The database: engines, sessions, migrations and the full-text index."""

from memory.storage.database import (
    Database,
    DatabaseLocked,
    DatabaseMissing,
    DatabaseUnavailable,
    DatabaseWriteFailed,
)

__all__ = ["Database", "DatabaseLocked", "DatabaseMissing", "DatabaseUnavailable", "DatabaseWriteFailed"]
