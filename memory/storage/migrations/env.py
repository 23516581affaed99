"""Alembic environment: runs on a connection handed in by `memory.storage.migrate`."""

from alembic import context

from memory.models import Base

config = context.config
connection = config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
