"""LLM usage rows say when the request was cancelled while its answer was awaited (shutdown, a rerank
timeout): the provider may have charged it, so the row keeps the estimated prompt tokens, flagged as such
(bot.llm.usage).

Revision ID: 0019_llm_usage_cancelled
Revises: 0018_person_gaps_nickname_version
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019_llm_usage_cancelled"
down_revision: str | Sequence[str] | None = "0018_person_gaps_nickname_version"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("llm_usage") as batch:
        batch.add_column(sa.Column("cancelled", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("llm_usage") as batch:
        batch.drop_column("cancelled")
