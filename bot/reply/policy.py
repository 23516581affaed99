"""When the bot answers: mentioned, replied to, named, a keyword, or by chance; per-chat off switch."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from bot.config.settings import BotSettings, ReplySettings
from memory.recall.scope import is_listed
from memory.text import normalize
from memory.types import ChatMessage

_FULL_WIDTH_OFFSET = ord("Ａ") - ord("A")  # FF01–FF5E are the full-width forms of ASCII 21–7E


@dataclass(frozen=True, slots=True)
class ReplyDecision:
    reply: bool
    reason: str


def silenced(message: ChatMessage, reply: ReplySettings) -> str | None:
    """Why the bot answers nothing at all to `message`, memory commands included (answering is off,
    it is the bot's own message or another bot's, its chat is disabled: listed in `disabled_chats` as
    `platform:chat_id` or as the chat id alone), or None."""
    if not reply.enabled:
        return "disabled"
    if message.is_bot:
        return "own message"
    if message.from_bot:
        return "another bot"
    if is_listed(message.platform, message.chat_id, reply.disabled_chats):
        return "chat disabled"
    return None


def _contains_any(text: str, words: Iterable[str]) -> bool:
    """Whether normalised `text` holds one of `words` (normalised; a blank word, such as a full-width
    space, is no word and matches nothing)."""
    return any(word in text for word in map(normalize, words) if word)


def decide(
    message: ChatMessage,
    reply: ReplySettings,
    bot: BotSettings,
    replied_to_bot: bool,
    rng: random.Random,
) -> ReplyDecision:
    """Whether to answer `message`, and why."""
    if (reason := silenced(message, reply)) is not None:
        return ReplyDecision(False, reason)
    if reply.on_mention and (message.to_bot or bot.self_id in message.mentions):
        return ReplyDecision(True, "mentioned")
    if reply.on_reply and replied_to_bot:
        return ReplyDecision(True, "replied to")
    text = normalize(message.text)
    if reply.on_name and _contains_any(text, (bot.name, *bot.aliases)):
        return ReplyDecision(True, "named")
    if _contains_any(text, reply.keywords):
        return ReplyDecision(True, "keyword")
    if reply.probability > 0 and rng.random() < reply.probability:
        return ReplyDecision(True, "chance")
    return ReplyDecision(False, "not addressed")


def without_bot_names(text: str, bot: BotSettings) -> str:
    """`text` without the bot's names and @-mentions of them: what the message asks, for recall
    (otherwise every earlier message addressed to the bot would match the name). As in `decide`, a
    name matches in any case and in full-width or half-width forms."""
    folded = {unicodedata.normalize("NFKC", n).strip() for n in (bot.name, *bot.aliases)}
    names = sorted(folded - {""}, key=len, reverse=True)
    if not names:
        return text
    pattern = re.compile("[@＠]?(?:" + "|".join(_any_width(n) for n in names) + ")", re.IGNORECASE)
    return " ".join(pattern.sub(" ", text).split())


def _any_width(name: str) -> str:
    """A pattern matching `name` (NFKC) with each ASCII character also in its full-width form."""
    return "".join(
        f"[{re.escape(c)}{chr(ord(c) + _FULL_WIDTH_OFFSET)}]" if "!" <= c <= "~" else re.escape(c)
        for c in name
    )
