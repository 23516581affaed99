"""Two follow-ups of people's memory:
- messages a person consolidation read offline only, although it was to ask the model, are noted
  (`person_llm_gaps`) so the model is asked about them once it answers again (memory.persons.relearn);
- a person's nickname changing, in any process, moves the global name version (a trigger): a member
  going back to a nickname they had before adds no alias, and caches of names checked against the
  version (memory.nicknames) kept the newer one.

Revision ID: 0018_person_gaps_nickname_version
Revises: 0017_history_digest_tried
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_person_gaps_nickname_version"
down_revision: str | Sequence[str] | None = "0017_history_digest_tried"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Version row 0 is the global scope (memory.persons.store.GLOBAL); a nickname is the person's own.
NICKNAME_TRIGGER = """
CREATE TRIGGER persons_nickname_version AFTER UPDATE OF nickname ON persons
WHEN old.nickname IS NOT new.nickname
BEGIN
    INSERT INTO person_alias_versions (chat_id, version) VALUES (0, 1)
    ON CONFLICT (chat_id) DO UPDATE SET version = version + 1;
END
"""


def upgrade() -> None:
    op.create_table(
        "person_llm_gaps",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, sa.ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
        sa.Column("message_ids", sa.JSON, nullable=False),
        sa.Column("time", sa.Float, nullable=False),
        sa.Column("tried", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_person_llm_gaps_due", "person_llm_gaps", ["tried", "time"])
    op.execute(NICKNAME_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS persons_nickname_version")
    op.drop_index("ix_person_llm_gaps_due", table_name="person_llm_gaps")
    op.drop_table("person_llm_gaps")
