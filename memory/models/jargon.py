"""The jargon dictionary: terms, per-chat counts, evidence as message references, the review trail.

A term's scope is `chat_id`: NULL means global (shared by every chat), otherwise the one chat it was
mined in. `normalized` (NFKC + casefold) is unique per scope. Evidence rows point at `messages`; the
context shown around them is read from `messages` at display time, never copied here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base

STATUSES: tuple[str, ...] = ("candidate", "inferred", "approved", "rejected")
# "member": the meaning a member gave in chat (memory.jargon.explanations).
PROVENANCES: tuple[str, ...] = ("mined", "inferred", "manual", "member")


class Jargon(Base):
    """One dictionary entry."""

    __tablename__ = "jargon"
    __table_args__ = (IDS_NEVER_REUSED,)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int | None] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), nullable=True)
    content: Mapped[str] = mapped_column(String(256))
    normalized: Mapped[str] = mapped_column(String(256))
    meaning: Mapped[str] = mapped_column(Text, default="")
    is_jargon: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    count: Mapped[int] = mapped_column(Integer, default=0)
    last_inference_count: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="candidate")
    provenance: Mapped[str] = mapped_column(String(16), default="mined")
    decided_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    decided_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Bumped whenever what the reply path explains changes (content, meaning, status, is_jargon), so
    # cached matchers notice edits made by another process.
    revision: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


# SQLite treats NULLs as distinct in a UNIQUE constraint, so global terms (chat_id NULL) need the
# expression index to stay unique.
Index("uq_jargon_scope_normalized", func.coalesce(Jargon.chat_id, 0), Jargon.normalized, unique=True)
Index("ix_jargon_status_count", Jargon.status, Jargon.count)


class JargonChatCount(Base):
    """How often a term was seen in one chat (a global term is counted per chat too)."""

    __tablename__ = "jargon_chat_counts"

    jargon_id: Mapped[int] = mapped_column(ForeignKey("jargon.id", ondelete="CASCADE"), primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)


class JargonEvidence(Base):
    """A message a term was seen in (a reference; the text stays in `messages`)."""

    __tablename__ = "jargon_evidence"
    __table_args__ = (
        UniqueConstraint("jargon_id", "message_id"),
        Index("ix_jargon_evidence_chat", "jargon_id", "chat_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    jargon_id: Mapped[int] = mapped_column(ForeignKey("jargon.id", ondelete="CASCADE"))
    message_id: Mapped[int] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))


class JargonReview(Base):
    """The review trail: who did what to an entry, with the values before and after.

    `jargon_id` is kept without a foreign key so the trail of a deleted entry survives.
    """

    __tablename__ = "jargon_reviews"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    jargon_id: Mapped[int] = mapped_column(Integer, index=True)
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    old: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    new: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    time: Mapped[float] = mapped_column(Float)
