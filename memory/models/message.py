"""Raw messages, verbatim; never deleted by forgetting. Indexed in the FTS table `messages_fts`."""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("chat_id", "platform_message_id"),
        Index("ix_messages_chat_time", "chat_id", "time"),
        # Added by 0014_messages_chat_id: a chat's messages in id order (recent window, job cursors).
        Index("ix_messages_chat_id", "chat_id", "id"),
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    platform_message_id: Mapped[str] = mapped_column(String(128))
    person_id: Mapped[int | None] = mapped_column(
        ForeignKey("persons.id", ondelete="SET NULL"), nullable=True
    )
    sender_name: Mapped[str] = mapped_column(String(256), default="")
    sender_card: Mapped[str] = mapped_column(String(256), default="")
    text: Mapped[str] = mapped_column(Text, default="")
    segments: Mapped[list[dict[str, str]]] = mapped_column(JSON, default=list)
    reply_to: Mapped[str | None] = mapped_column(String(128), nullable=True)
    mentions: Mapped[list[str]] = mapped_column(JSON, default=list)
    time: Mapped[float] = mapped_column(Float)
    utc_offset_minutes: Mapped[int] = mapped_column(Integer, default=0)
    is_bot: Mapped[bool] = mapped_column(Boolean, default=False)
    to_bot: Mapped[bool] = mapped_column(Boolean, default=False)
    # Added by 0023_messages_forwarded: re-shares words written elsewhere (`ChatMessage.forwarded`).
    forwarded: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Added by 0025_messages_first_id: for an edited version, the id its first version was recorded
    # under (the edit is a message of its own, under a new id); NULL for a message that is no edit.
    first_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class IdFloor(Base):
    """The highest id ever used in a table whose rows can be deleted (`memory.message_ids`)."""

    __tablename__ = "id_floors"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(Integer)


class DeletedMessage(Base):
    """A message its platform said was deleted: it was removed with what was learnt from it, and is
    not recorded again when an import or a late delivery brings it back; added by
    0011_deleted_messages."""

    __tablename__ = "deleted_messages"

    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"), primary_key=True)
    platform_message_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    time: Mapped[float] = mapped_column(Float)
