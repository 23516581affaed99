"""Recall's own rows: stored embedding vectors and synthetic preference documents."""

from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from memory.models.base import IDS_NEVER_REUSED, Base


class EmbeddingVector(Base):
    """One vector for one recallable row (`kind` message | history | preference) under one model.

    `vector` holds `dimension` little-endian float32 values, L2-normalised. Rows of another model, or of
    another size under the same model name, are ignored by search, so changing the model never mixes
    vector spaces.
    """

    __tablename__ = "embeddings"
    __table_args__ = (
        UniqueConstraint("kind", "ref_id", "model", name="uq_embeddings_kind_ref_model"),
        Index("ix_embeddings_chat_model", "chat_id", "model"),
        # Added by 0015_embeddings_chat_space: what changed in a chat's vector space, index-only.
        Index("ix_embeddings_chat_space", "chat_id", "model", "dimension", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    ref_id: Mapped[int] = mapped_column(Integer)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    model: Mapped[str] = mapped_column(String(256))
    dimension: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[float] = mapped_column(Float)


class PreferenceDoc(Base):
    """A synthetic document for a stated preference or habit ("I usually…", "我一般…"), kept beside
    the verbatim message it came from (never instead of it). Indexed in `preference_fts`."""

    __tablename__ = "preference_docs"
    __table_args__ = (
        Index("ix_preference_docs_chat", "chat_id"),
        Index("ix_preference_docs_message", "message_id"),
        IDS_NEVER_REUSED,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    message_id: Mapped[int] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    person_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    kind: Mapped[str] = mapped_column(String(32))
    text: Mapped[str] = mapped_column(Text)
    time: Mapped[float] = mapped_column(Float)
