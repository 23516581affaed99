"""People memory tables: aliases, the per-chat name the bot uses, facts, timeline, versions, forget log.

Scope: a row with `chat_id` set was learnt in that chat and is shown only there; `chat_id` NULL means
global (the platform nickname, an admin's edit). Evidence is a `messages.id` (SET NULL if the message
is later removed, so a fact outlives a deleted message only as text).
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base


class PersonAlias(Base):
    """A name a person is known by: `source` is nickname | card | self | others | llm | admin;
    `alias_key` is `names.name_key(alias)`; `weight` in [0, 1] says how trusted it is."""

    __tablename__ = "person_aliases"
    __table_args__ = (Index("ix_person_aliases_chat", "chat_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("persons.id", ondelete="CASCADE"))
    chat_id: Mapped[int | None] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), nullable=True)
    alias: Mapped[str] = mapped_column(String(256))
    alias_key: Mapped[str] = mapped_column(String(256))
    source: Mapped[str] = mapped_column(String(16))
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    count: Mapped[int] = mapped_column(Integer, default=1)
    first_seen: Mapped[float] = mapped_column(Float)
    last_seen: Mapped[float] = mapped_column(Float)
    message_id: Mapped[int | None] = mapped_column(
        ForeignKey("messages.id", ondelete="SET NULL"), nullable=True
    )


# Unique per scope; SQLite treats NULLs as distinct, hence ifnull(chat_id, 0) for the global scope.
Index(
    "ux_person_aliases_scope_key",
    PersonAlias.person_id,
    func.ifnull(PersonAlias.chat_id, 0),
    PersonAlias.alias_key,
    PersonAlias.source,
    unique=True,
)


class PersonChatName(Base):
    """`person_name` per chat: the alias the bot uses for a person there, unique within the chat
    (by `name_key`). `source` is card | nickname | id | self | llm | admin; `reason` explains an LLM or
    admin choice."""

    __tablename__ = "person_chat_names"
    __table_args__ = (UniqueConstraint("chat_id", "name_key"),)

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("persons.id", ondelete="CASCADE"), primary_key=True)
    person_name: Mapped[str] = mapped_column(String(256))
    name_key: Mapped[str] = mapped_column(String(256))
    source: Mapped[str] = mapped_column(String(16), default="card")
    reason: Mapped[str] = mapped_column(String(512), default="")
    updated_at: Mapped[float] = mapped_column(Float)


class PersonFact(Base):
    """One attribute of a person (`key`, `value`) with its evidence. Superseded facts are kept, with
    `superseded_at` and the message that replaced them; `seen_message_ids` lists later repeats."""

    __tablename__ = "person_facts"
    __table_args__ = (Index("ix_person_facts_person", "person_id", "chat_id"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("persons.id", ondelete="CASCADE"))
    chat_id: Mapped[int | None] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), nullable=True)
    key: Mapped[str] = mapped_column(String(64))
    value: Mapped[str] = mapped_column(String(256))
    source: Mapped[str] = mapped_column(String(16), default="self")
    confidence: Mapped[float] = mapped_column(Float, default=0.8)
    message_id: Mapped[int | None] = mapped_column(
        ForeignKey("messages.id", ondelete="SET NULL"), nullable=True
    )
    span_start: Mapped[int] = mapped_column(Integer, default=0)
    span_end: Mapped[int] = mapped_column(Integer, default=0)
    evidence: Mapped[str] = mapped_column(Text, default="")
    time: Mapped[float] = mapped_column(Float)
    superseded_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    superseded_by: Mapped[int | None] = mapped_column(Integer, nullable=True)
    seen_message_ids: Mapped[list[int]] = mapped_column(JSON, default=list)


class PersonTimelineEntry(Base):
    """A dated event in a person's life as a chat learnt it, with the messages it came from."""

    __tablename__ = "person_timeline"
    __table_args__ = (Index("ix_person_timeline_person", "person_id", "chat_id", "time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("persons.id", ondelete="CASCADE"))
    chat_id: Mapped[int | None] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), nullable=True)
    time: Mapped[float] = mapped_column(Float)
    kind: Mapped[str] = mapped_column(String(16), default="event")
    text: Mapped[str] = mapped_column(String(512))
    message_ids: Mapped[list[int]] = mapped_column(JSON, default=list)


class PersonAliasVersion(Base):
    """A counter per chat (0 = global aliases) bumped whenever the names of that scope change, so
    resolvers rebuild their cached alias index only when needed."""

    __tablename__ = "person_alias_versions"

    chat_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, default=0)


class PersonForgotten(Base):
    """A person whose memory was deleted on request: consolidation never re-learns from their
    messages recorded by then (ids up to `last_message_id`, the highest at the request; added by
    0024_forgotten_message_mark, None for older requests) or dated up to `time` (kept raw messages
    stay out of their profile; memory.persons.forgotten). When their messages were deleted too, none
    sent up to `messages_removed_until` is recorded again (an import of the same history); added by
    0010_forgotten_messages."""

    __tablename__ = "person_forgotten"

    person_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    time: Mapped[float] = mapped_column(Float)
    removed_messages: Mapped[int] = mapped_column(Integer, default=0)
    messages_removed_until: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)
    last_message_id: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)


class PersonLlmGap(Base):
    """Messages a consolidation read offline only although it was to ask the model (down, over budget,
    refusing): the model is asked about them later, newest first (memory.persons.relearn). Added by
    0018_person_gaps_nickname_version. `tried` is set when the model answered them unusably, at
    `tried_at` (added by 0020_person_gap_tried_at; None for chunks tried before it): they are asked
    about once more after `memory.persons.relearn.RETRY_AFTER`, then removed."""

    __tablename__ = "person_llm_gaps"
    __table_args__ = (Index("ix_person_llm_gaps_due", "tried", "time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    message_ids: Mapped[list[int]] = mapped_column(JSON, default=list)
    time: Mapped[float] = mapped_column(Float)  # of the newest of the messages
    tried: Mapped[bool] = mapped_column(Boolean, default=False)
    tried_at: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)
