"""The neutral message view the thread disentangler works on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ThreadMessage:
    """One chat message as the disentangler sees it.

    ``key`` is unique within the chat; ``time`` is timezone-aware; ``speaker_names`` are the names the
    speaker goes by (nick, display name, aliases) so that others naming them can be detected;
    ``reply_to`` and ``mentions`` are the platform's explicit reply link and @-mentions (speaker ids);
    ``is_system`` marks join/part/rename lines.
    """

    key: str
    time: datetime
    speaker: str
    speaker_names: tuple[str, ...]
    text: str
    reply_to: str | None = None
    mentions: tuple[str, ...] = ()
    is_system: bool = False

    def __post_init__(self) -> None:
        if self.time.tzinfo is None or self.time.utcoffset() is None:
            raise ValueError(f"ThreadMessage {self.key!r}: time must be timezone-aware")
