"""Per-job, per-chat progress (cursors, last run), so jobs resume after a restart."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import Base


class JobState(Base):
    __tablename__ = "job_state"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    chat_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cursor: Mapped[int] = mapped_column(Integer, default=0)
    last_run: Mapped[float] = mapped_column(Float, default=0.0)
    data: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
