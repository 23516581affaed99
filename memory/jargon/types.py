"""The neutral inputs and outputs of jargon mining (no storage, no platform)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MinerMessage:
    """One chat message as the miner sees it: `key` is the message id used as evidence; `forwarded`
    when it re-shares words written elsewhere."""

    key: str
    text: str
    speaker: str
    is_bot: bool = False
    forwarded: bool = False


@dataclass(frozen=True, slots=True)
class Candidate:
    """A term proposed for the dictionary.

    `content` is the term as first written in the window (original casing and width); dictionary
    upserts should key it by `memory.text.normalize(content)`. `message_keys` are the window messages
    it occurs in (the evidence), in window order. `score` ranks candidates of one run (higher = more
    jargon-like); it is comparable within a method, not across the LLM and offline paths.
    """

    content: str
    message_keys: tuple[str, ...]
    score: float
