"""People memory: aliases, per-chat person names, facts, timeline, alias versions, forget log.

Revision ID: 0003_persons
Revises: 0002_chat_history
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_persons"
down_revision: str | Sequence[str] | None = "0002_chat_history"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _person() -> sa.Column:
    return sa.Column("person_id", sa.Integer, sa.ForeignKey("persons.id", ondelete="CASCADE"), nullable=False)


def _scope() -> sa.Column:
    return sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=True)


def _message() -> sa.Column:
    return sa.Column(
        "message_id", sa.Integer, sa.ForeignKey("messages.id", ondelete="SET NULL"), nullable=True
    )


def upgrade() -> None:
    op.create_table(
        "person_aliases",
        sa.Column("id", sa.Integer, primary_key=True),
        _person(),
        _scope(),
        sa.Column("alias", sa.String(256), nullable=False),
        sa.Column("alias_key", sa.String(256), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.Column("count", sa.Integer, nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
        sa.Column("last_seen", sa.Float, nullable=False),
        _message(),
    )
    op.create_index("ix_person_aliases_chat", "person_aliases", ["chat_id"])
    op.execute(
        "CREATE UNIQUE INDEX ux_person_aliases_scope_key "
        "ON person_aliases (person_id, ifnull(chat_id, 0), alias_key, source)"
    )
    op.create_table(
        "person_chat_names",
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("person_id", sa.Integer, sa.ForeignKey("persons.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("person_name", sa.String(256), nullable=False),
        sa.Column("name_key", sa.String(256), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(512), nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.UniqueConstraint("chat_id", "name_key", name="uq_person_chat_names_chat_id"),
    )
    op.create_table(
        "person_facts",
        sa.Column("id", sa.Integer, primary_key=True),
        _person(),
        _scope(),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        _message(),
        sa.Column("span_start", sa.Integer, nullable=False),
        sa.Column("span_end", sa.Integer, nullable=False),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("superseded_at", sa.Float, nullable=True),
        sa.Column("superseded_by", sa.Integer, nullable=True),
        sa.Column("seen_message_ids", sa.JSON, nullable=False),
    )
    op.create_index("ix_person_facts_person", "person_facts", ["person_id", "chat_id"])
    op.create_table(
        "person_timeline",
        sa.Column("id", sa.Integer, primary_key=True),
        _person(),
        _scope(),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("text", sa.String(512), nullable=False),
        sa.Column("message_ids", sa.JSON, nullable=False),
    )
    op.create_index("ix_person_timeline_person", "person_timeline", ["person_id", "chat_id", "time"])
    op.create_table(
        "person_alias_versions",
        sa.Column("chat_id", sa.Integer, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
    )
    op.create_table(
        "person_forgotten",
        sa.Column("person_id", sa.Integer, primary_key=True),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("removed_messages", sa.Integer, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("person_forgotten")
    op.drop_table("person_alias_versions")
    op.drop_table("person_timeline")
    op.drop_table("person_facts")
    op.drop_table("person_chat_names")
    op.execute("DROP INDEX ux_person_aliases_scope_key")
    op.drop_table("person_aliases")
