"""Tokens spent per LLM call, per task: the basis of budgets and `qunyi doctor`."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, Index, Integer, String, false
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import Base


class LlmUsage(Base):
    __tablename__ = "llm_usage"
    __table_args__ = (Index("ix_llm_usage_task_time", "task", "time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(128), default="")
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    ok: Mapped[bool] = mapped_column(Boolean, default=True)
    error: Mapped[str] = mapped_column(String(512), default="")
    time: Mapped[float] = mapped_column(Float)
    # The request was cancelled while its answer was awaited: the prompt tokens are estimated and the
    # completion, which the provider may also have charged, is unknown (counted as 0).
    cancelled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
