"""What a packed topic says: theme, keywords, summary and key points — from the LLM or offline.

Offline: keywords are the topic's heaviest TF-IDF terms (or TextRank), the theme is its top keywords,
and the summary and key points are the most central messages (closest to the topic's term centroid),
shown in time order. The LLM path asks one question and falls back to the offline digest when the
model is unavailable, over budget or answers badly.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from memory.context.render import forward_marked
from memory.history import terms
from memory.history.source import SourceMessage, speaker_names
from memory.model_answer import ModelAnswer
from memory.offload import thread_work_in_runs
from memory.ports import LLMPort, LLMUnavailable
from memory.text import normalize, truncate
from memory.text.language import Language, language_of

log = logging.getLogger(__name__)

MIN_KEYWORDS = 3
MAX_KEYWORDS = 10
TITLE_WORDS = 3  # an offline title lists this many keywords
THEME_CHARS = 48
POINT_CHARS = 80
SUMMARY_CHARS = 240
LLM_INPUT_CHARS = 6000

KeywordMethod = Literal["tfidf", "textrank"]

MessageTerms = Mapping[int, Sequence[str]]
"""The terms (`terms.terms_of`) of each message by id, its speakers' names left out."""


@dataclass(frozen=True, slots=True)
class Digest:
    """The summarised form of a topic."""

    theme: str
    keywords: list[str]
    summary: str
    key_points: list[str] = field(default_factory=list)
    provenance: Literal["llm", "offline"] = "offline"


def speaker_line(message: SourceMessage, max_chars: int | None = None) -> str:
    """`name: text` as a topic or summary prompt shows a message (its text on one line, perhaps cut);
    a forward says so before the name, so its words are not taken for the speaker's own."""
    text = " ".join(message.text.split())
    name = forward_marked(message.display_name, message.forwarded)
    return f"{name}: {truncate(text, max_chars) if max_chars else text}"


def message_chars(message: SourceMessage) -> int:
    """How much text a message gives the jieba work (for cutting it in runs)."""
    return len(message.text)


def _terms_named(messages: Sequence[SourceMessage], names: frozenset[str]) -> list[tuple[int, list[str]]]:
    return [(m.id, terms.terms_of(m.text, names)) for m in messages]


def message_terms(messages: Sequence[SourceMessage]) -> dict[int, list[str]]:
    """The terms of each message by id, the names of the speakers of `messages` left out."""
    return dict(_terms_named(messages, speaker_names(messages)))


async def terms_in_runs(messages: Sequence[SourceMessage]) -> dict[int, list[str]]:
    """`message_terms`, found run by run on worker threads (memory.offload): the jieba part of weighing
    messages, so that a job cancelled at shutdown stops after the run in hand."""
    names = speaker_names(messages)
    return dict(await thread_work_in_runs(messages, message_chars, partial(_terms_named, names=names)))


def keywords_for(
    messages: Sequence[SourceMessage], method: KeywordMethod = "tfidf", found: MessageTerms | None = None
) -> list[str]:
    """3–10 keywords (fewer only when the text has fewer content words); words that only say when,
    who or how (`terms.is_topic_word`) are left out, so a title reads "欢送会", not "昨晚、别搞".
    `found`: the messages' `message_terms`, when known already."""
    found = message_terms(messages) if found is None else found
    weights = terms.weigh_terms(found[m.id] for m in messages)
    ranked = (
        terms.textrank_keywords([m.text for m in messages], MAX_KEYWORDS, speaker_names(messages))
        if method == "textrank"
        else []
    )
    return topic_words([*ranked, *terms.top(weights, len(weights))], MAX_KEYWORDS)


def topic_words(ranked: Iterable[str], n: int) -> list[str]:
    """The first `n` of `ranked` (best first) that may name what a topic is about
    (`terms.is_topic_word`), each once."""
    chosen: list[str] = []
    for word in ranked:
        if len(chosen) >= n:
            break
        if word not in chosen and terms.is_topic_word(word):
            chosen.append(word)
    return chosen


def central(
    messages: Sequence[SourceMessage], n: int, found: MessageTerms | None = None
) -> list[SourceMessage]:
    """The `n` messages closest to the topic's term centroid (longer ones favoured on ties), in time
    order. Messages without content words are never chosen unless nothing else is there. `found`: the
    messages' `message_terms`, when known already."""
    found = message_terms(messages) if found is None else found
    vectors = [terms.weigh_terms([found[m.id]]) for m in messages]
    centroid: terms.TermWeights = {}
    for vector in vectors:
        centroid = terms.merge(centroid, vector)
    scored = [(terms.cosine(vector, centroid), len(vector), -i) for i, vector in enumerate(vectors)]
    candidates = [i for i, v in enumerate(vectors) if v] or list(range(len(messages)))
    order = sorted(candidates, key=lambda i: scored[i], reverse=True)
    chosen = sorted(order[:n])
    return [messages[i] for i in chosen]


# What an offline digest writes itself, in the chat's language (`memory.text.language`): the list
# separator and the title of a topic without keywords.
_OWN_WORDS: dict[Language, tuple[str, str]] = {
    "zh": ("、", "闲聊"),
    "en": (", ", "chat"),
}


def theme_from(keywords: Sequence[str], language: Language | None = None) -> str:
    """An offline topic title: its first keywords, listed as the chat's language lists words (that of
    the keywords themselves, however few, unless `language` is given)."""
    separator, untitled = _OWN_WORDS[language or language_of(keywords, min_words=1)]
    return truncate(separator.join(keywords[:TITLE_WORDS]), THEME_CHARS) if keywords else untitled


def theme_of_terms(weights: terms.TermWeights) -> str:
    """The offline title of a topic still collecting, from its weighted terms: its heaviest words
    that may name what it is about (`topic_words`), as a packed topic's keywords are chosen, so it
    reads "开炉、团建", not "不接、冻结"."""
    return theme_from(topic_words(terms.top(weights, len(weights)), TITLE_WORDS))


def offline_digest(
    messages: Sequence[SourceMessage], method: KeywordMethod = "tfidf", found: MessageTerms | None = None
) -> Digest:
    """Keywords by TF-IDF/TextRank and an extractive summary (its two most central messages, each with
    its speaker); no model involved. Who took part is the topic's `participants`, shown beside the
    summary (a recalled topic's line, `qunyi topics`), so the summary does not list them again.
    `found`: the messages' `message_terms`, when known already (`terms_in_runs`)."""
    found = message_terms(messages) if found is None else found
    keywords = keywords_for(messages, method, found)
    points = [speaker_line(m, POINT_CHARS) for m in central(messages, 5, found)]
    summary = " / ".join(speaker_line(m, POINT_CHARS) for m in central(messages, 2, found))
    theme = theme_from(keywords, language_of(m.text for m in messages if not m.is_bot))
    return Digest(theme, keywords, truncate(summary, SUMMARY_CHARS), points, "offline")


async def offline_digest_in_runs(
    messages: Sequence[SourceMessage], method: KeywordMethod = "tfidf"
) -> Digest:
    """`offline_digest` off the event loop: the messages' terms (the jieba part: seconds for a topic of
    long messages) found run by run (`terms_in_runs`), then one worker-thread call that weighs them;
    a job cancelled at shutdown stops after the run in hand. The same digest as in one call."""
    found = await terms_in_runs(messages)
    return await asyncio.to_thread(offline_digest, messages, method, found)


class DigestAnswer(ModelAnswer):
    """The JSON the summary task must return."""

    theme: str = Field(min_length=1, max_length=200)
    keywords: list[str] = Field(min_length=1, max_length=30)
    # Stripped before the length check: a summary of only spaces is a bad answer (repaired once, then
    # the offline digest), not an empty summary stored as the model's.
    summary: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)]
    key_points: list[str] = Field(default_factory=list, max_length=30)


SUMMARY_SYSTEM = (
    "你在为一个群聊机器人整理记忆。下面是群里关于同一话题的一段对话。请给出:"
    "theme(简短的话题标题)、keywords(3到10个关键词)、summary(两三句话的概括,写清谁、何时、决定了什么)、"
    "key_points(要点列表,每条一句)。只依据对话内容,不要编造。"
    " You summarise one topic of a group chat for a chatbot's memory; answer in the chat's language."
)


def _conversation(messages: Sequence[SourceMessage]) -> str:
    lines = [f"{m.when:%m-%d %H:%M} {speaker_line(m, 300)}" for m in messages]
    text = "\n".join(lines)
    return truncate(text, LLM_INPUT_CHARS)


def _clean_list(items: Sequence[str], limit: int, max_chars: int) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        text = " ".join(str(item).split())
        if text and normalize(text) not in seen:
            seen[normalize(text)] = truncate(text, max_chars)
    return list(seen.values())[:limit]


async def llm_digest(
    llm: LLMPort, messages: Sequence[SourceMessage], title: str, method: KeywordMethod = "tfidf"
) -> Digest:
    """One `summary` call; raises LLMUnavailable (the caller falls back offline)."""
    prompt = [
        {"role": "system", "content": SUMMARY_SYSTEM},
        {"role": "user", "content": f"话题 / topic: {title}\n\n{_conversation(messages)}"},
    ]
    answer = await llm.complete_json("summary", prompt, DigestAnswer)
    keywords = _clean_list(answer.keywords, MAX_KEYWORDS, 32)
    if len(keywords) < MIN_KEYWORDS:
        found = await terms_in_runs(messages)
        for word in await asyncio.to_thread(keywords_for, messages, method, found):
            if len(keywords) >= MIN_KEYWORDS:
                break
            if word not in keywords:
                keywords.append(word)
    theme = truncate(" ".join(answer.theme.split()), THEME_CHARS) or theme_from(keywords)
    points = _clean_list(answer.key_points, 10, 200)
    return Digest(theme, keywords, truncate(answer.summary.strip(), 2000), points, "llm")


async def digest(
    messages: Sequence[SourceMessage],
    title: str,
    llm: LLMPort | None,
    use_llm: bool,
    method: KeywordMethod = "tfidf",
) -> Digest:
    """The LLM digest when enabled and available, else (or on any LLM failure) the offline one."""
    if use_llm and llm is not None and llm.available("summary"):
        try:
            return await llm_digest(llm, messages, title, method)
        except LLMUnavailable as exc:
            log.info("summary LLM unavailable (%s); packing offline", exc.reason)
    return await offline_digest_in_runs(messages, method)
