"""Mid-term memory: the topic cache (persisted) and ChatHistory rows, plus the forgetting log."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base


class TopicCacheEntry(Base):
    """A topic still collecting messages. Removed only after its ChatHistory row is committed."""

    __tablename__ = "topic_cache"
    __table_args__ = (Index("ix_topic_cache_chat", "chat_id"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(String(256), default="")
    thread_keys: Mapped[list[str]] = mapped_column(JSON, default=list)
    message_ids: Mapped[list[int]] = mapped_column(JSON, default=list)
    fragment_count: Mapped[int] = mapped_column(Integer, default=0)
    participants: Mapped[list[int]] = mapped_column(JSON, default=list)
    no_update_checks: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    # Added by 0003_history_extras: weighted terms used to reuse the topic offline, the true time
    # span of its messages, and whether its title came from the LLM or the offline path.
    terms: Mapped[dict[str, float]] = mapped_column(JSON, default=dict)
    first_time: Mapped[float] = mapped_column(Float, default=0.0)
    last_time: Mapped[float] = mapped_column(Float, default=0.0)
    provenance: Mapped[str] = mapped_column(String(16), default="offline")


class ChatHistory(Base):
    """A packed topic: summary and keywords over its verbatim source messages. Indexed in
    `chat_history_fts`. `count` rises when recalled; `forget_times` is the forgetting stage passed."""

    __tablename__ = "chat_history"
    __table_args__ = (
        Index("ix_chat_history_chat_end", "chat_id", "end_time"),
        Index("ix_chat_history_forget", "forget_times", "end_time"),
        # The forget log and a reply's context name topics by id.
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    theme: Mapped[str] = mapped_column(String(256))
    keywords: Mapped[list[str]] = mapped_column(JSON, default=list)
    summary: Mapped[str] = mapped_column(Text, default="")
    key_points: Mapped[list[str]] = mapped_column(JSON, default=list)
    original_text: Mapped[str] = mapped_column(Text, default="")
    participants: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    start_time: Mapped[float] = mapped_column(Float)
    end_time: Mapped[float] = mapped_column(Float)
    source_message_ids: Mapped[list[int]] = mapped_column(JSON, default=list)
    count: Mapped[int] = mapped_column(Integer, default=0)
    forget_times: Mapped[int] = mapped_column(Integer, default=0)
    provenance: Mapped[str] = mapped_column(String(16), default="offline")
    created_at: Mapped[float] = mapped_column(Float)
    # Added by 0017_history_digest_tried: the source message ids of an offline row when the summary
    # model last answered unusably for it (memory.history.redigest); it is asked again only about
    # other messages (a deletion rebuilt the row).
    digest_tried: Mapped[list[int] | None] = mapped_column(JSON, nullable=True, default=None)


class ForgetLogEntry(Base):
    """What forgetting deleted, so an admin can see it."""

    __tablename__ = "forget_log"
    __table_args__ = (IDS_NEVER_REUSED,)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_history_id: Mapped[int] = mapped_column(Integer)
    chat_id: Mapped[int] = mapped_column(Integer)
    theme: Mapped[str] = mapped_column(String(256))
    stage: Mapped[int] = mapped_column(Integer)
    count: Mapped[int] = mapped_column(Integer)
    time: Mapped[float] = mapped_column(Float)
