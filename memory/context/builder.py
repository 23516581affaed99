"""Assembling the reply context from providers, with no LLM call."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Protocol

from memory.context.render import fit_lines, neutralize, render_section
from memory.messages import StoredMessage
from memory.text import estimate_tokens

log = logging.getLogger(__name__)

SEPARATOR = "\n\n"  # between sections


@dataclass(frozen=True, slots=True)
class ContextRequest:
    """What a provider gets: the chat, the message being answered, the recent window, the time, the
    text to recall for, the time zone to show times in (None: each memory's own offset), and the
    stored message of the chat the one answered replies to, if any."""

    chat_id: int
    message: StoredMessage | None
    recent: Sequence[StoredMessage]
    now: datetime
    query: str = ""
    zone: tzinfo | None = None
    replied: StoredMessage | None = None


@dataclass(slots=True)
class ContextSection:
    """One block of context. `lines` are in priority order; the builder cuts from the end. `keys`
    name the memory behind each line (`("history", id)`, …) when the lines are recalled memories.
    Sections are placed by `priority`; one that must `fit_first` takes its room in the total budget
    before the others do (the recent window: recall leaves out the messages it was measured to show)."""

    name: str
    title: str
    lines: list[str]
    budget_tokens: int
    priority: int = 50
    show_reversed: bool = False
    keys: list[tuple[str, int]] = field(default_factory=list)
    fit_first: bool = False


class ContextProvider(Protocol):
    name: str

    async def section(self, request: ContextRequest) -> ContextSection | None: ...


@dataclass(slots=True)
class ReplyContext:
    sections: list[ContextSection] = field(default_factory=list)
    text: str = ""
    tokens: int = 0

    def shown(self, kind: str) -> list[int]:
        """Ids of the memories of `kind` whose lines made it into the context (each once, in order)."""
        ids = (i for s in self.sections for k, i in s.keys[: len(s.lines)] if k == kind)
        return list(dict.fromkeys(ids))


class ContextBuilder:
    """Runs providers and fits each section, then the whole, to the budgets: the sections that must
    `fit_first`, then the others in priority order; they are shown in priority order."""

    def __init__(self, providers: Sequence[ContextProvider], total_tokens: int) -> None:
        self.providers = list(providers)
        self.total_tokens = total_tokens

    async def build(self, request: ContextRequest) -> ReplyContext:
        sections: list[ContextSection] = []
        for provider in self.providers:
            try:
                section = await provider.section(request)
            except Exception:
                log.exception("context provider %s failed; its section is left out", provider.name)
                continue
            if section is not None and section.lines:
                sections.append(section)
        sections.sort(key=lambda s: (not s.fit_first, s.priority))
        remaining = self.total_tokens
        rendered: list[str] = []
        kept: list[ContextSection] = []
        for section in sections:
            separator = estimate_tokens(SEPARATOR) if rendered else 0
            budget = min(section.budget_tokens, remaining - separator)
            frame = estimate_tokens(render_section(section.name, section.title, []))
            section.lines = fit_lines([neutralize(line) for line in section.lines], budget - frame)
            if not section.lines:
                continue
            shown = section.lines[::-1] if section.show_reversed else section.lines
            block = render_section(section.name, section.title, shown)
            cost = estimate_tokens(block) + separator
            if cost > remaining:
                continue
            remaining -= cost
            rendered.append(block)
            kept.append(section)
        placed = sorted(zip(kept, rendered, strict=True), key=lambda pair: pair[0].priority)
        kept = [section for section, _ in placed]
        text = SEPARATOR.join(block for _, block in placed)
        return ReplyContext(sections=kept, text=text, tokens=estimate_tokens(text))
