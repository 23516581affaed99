"""Members' memory commands as typed in chat: `/recall …`, `/who …`, `/what …`.

A command may be addressed: after leading @-mentions (`@群忆 /who 小红`, how QQ and the console address
the bot) or with a bot username suffix (`/recall@qunyi_bot 爬山`, Telegram's form). The slash may be
full-width, and so may the command's letters (a keyboard in full-width mode); the argument follows any
whitespace and is kept as typed. A forwarded message re-shares someone else's words
and is never a command, whatever its text looks like.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.text import half_width
from memory.types import ChatMessage

NAMES = ("recall", "who", "what")

_LEADING_MENTIONS = re.compile(r"(?:[@＠]\S+\s+)+")
# Matched on the text made half-width (`half_width`): a keyboard in full-width mode types ／ｒｅｃａｌｌ.
_COMMAND = re.compile(r"/([A-Za-z]+)(@\S+)?(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class MemoryCommand:
    """A parsed command; `addressed` when it names an addressee (a leading mention or an @suffix)."""

    name: str
    argument: str
    addressed: bool


def parse(text: str) -> MemoryCommand | None:
    """The memory command `text` holds, or None when it holds none."""
    body = text.strip()
    mentions = _LEADING_MENTIONS.match(body)
    if mentions is not None:
        body = body[mentions.end() :]
    match = _COMMAND.fullmatch(half_width(body))
    if match is None or match.group(1).lower() not in NAMES:
        return None
    addressed = mentions is not None or match.group(2) is not None
    argument = body[match.start(3) :].strip() if match.group(3) is not None else ""  # as typed
    return MemoryCommand(match.group(1).lower(), argument, addressed)


def is_memory_command(text: str) -> bool:
    """Members asking the bot about memory are not themselves memories worth recalling."""
    return parse(text) is not None


def asks_memory(message: ChatMessage) -> bool:
    """Whether `message` is a member's memory command (never a forward: its words were written elsewhere)."""
    return not message.forwarded and is_memory_command(message.text)
