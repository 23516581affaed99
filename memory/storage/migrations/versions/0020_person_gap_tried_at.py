"""A person chunk the model answered unusably says when (`person_llm_gaps.tried_at`): the relearn job
asks about it once more after `memory.persons.relearn.RETRY_AFTER`, then removes it
(memory.persons.relearn). Chunks tried before this revision have none and are retried at the next run.

Revision ID: 0020_person_gap_tried_at
Revises: 0019_llm_usage_cancelled
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020_person_gap_tried_at"
down_revision: str | Sequence[str] | None = "0019_llm_usage_cancelled"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("person_llm_gaps") as batch:
        batch.add_column(sa.Column("tried_at", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("person_llm_gaps") as batch:
        batch.drop_column("tried_at")
