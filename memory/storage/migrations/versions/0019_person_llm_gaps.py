"""Messages a person consolidation read offline only, although it was to ask the model, are noted so
the model is asked about them once it answers again (memory.persons.relearn).

Revision ID: 0019_person_llm_gaps
Revises: 0017_history_digest_tried
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_person_llm_gaps"
down_revision: str | Sequence[str] | None = "0017_history_digest_tried"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


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


def downgrade() -> None:
    op.drop_index("ix_person_llm_gaps_due", table_name="person_llm_gaps")
    op.drop_table("person_llm_gaps")
