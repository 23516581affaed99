"""A person per platform account, and the accounts merged into a person."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base


class Person(Base):
    __tablename__ = "persons"
    __table_args__ = (UniqueConstraint("platform", "platform_user_id"), IDS_NEVER_REUSED)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    platform_user_id: Mapped[str] = mapped_column(String(128))
    nickname: Mapped[str] = mapped_column(String(256), default="")
    person_name: Mapped[str | None] = mapped_column(String(256), nullable=True)
    is_bot: Mapped[bool] = mapped_column(Boolean, default=False)
    first_seen: Mapped[float] = mapped_column(Float)
    last_seen: Mapped[float] = mapped_column(Float)
    message_count: Mapped[int] = mapped_column(Integer, default=0)


class PersonAccount(Base):
    """A platform account merged into another person (`qunyi people merge`): its messages and
    mentions count as that person's from then on, so the merge outlives the account's next message."""

    __tablename__ = "person_accounts"

    platform: Mapped[str] = mapped_column(String(32), primary_key=True)
    platform_user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    person_id: Mapped[int] = mapped_column(ForeignKey("persons.id", ondelete="CASCADE"), index=True)
    merged_at: Mapped[float] = mapped_column(Float)
