"""The database: engines, sessions, migrations and the full-text index."""

from memory.storage.database import Database, DatabaseLocked

__all__ = ["Database", "DatabaseLocked"]
