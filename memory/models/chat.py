"""Chats (MemPalace's "wings") and who has spoken in each."""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base


class Chat(Base):
    __tablename__ = "chats"
    __table_args__ = (UniqueConstraint("platform", "platform_chat_id"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    platform_chat_id: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(16), default="group")
    name: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[float] = mapped_column(Float)


class ChatMember(Base):
    """A person as seen in one chat: their group card there, their activity, and whether they left."""

    __tablename__ = "chat_members"

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("persons.id", ondelete="CASCADE"), primary_key=True)
    card: Mapped[str] = mapped_column(String(256), default="")
    first_seen: Mapped[float] = mapped_column(Float)
    last_seen: Mapped[float] = mapped_column(Float)
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    # Added by 0026_chat_members_left_at: when the platform said they left or were removed (after
    # their last message here); None while they are in the chat (memory.membership).
    left_at: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)


class ChatRedirect(Base):
    """A chat merged into another (memory.chat_merge): what arrives under its platform key goes to
    chat `chat_id`, its platform message ids prefixed with `prefix` as the merge prefixed those it
    moved; added by 0012_chat_redirects. `from_chat_id` is the database id the merged chat had (never
    given to another chat; None for a key never recorded as a chat, and for merges made before
    0013_redirect_chat_ids)."""

    __tablename__ = "chat_redirects"

    platform: Mapped[str] = mapped_column(String(32), primary_key=True)
    platform_chat_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), index=True)
    prefix: Mapped[str] = mapped_column(String(512))
    time: Mapped[float] = mapped_column(Float)
    from_chat_id: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
