"""Features of "message m continues earlier message c" and of "m starts a new thread".

All features are binary and named; a linear model (weights in ``model.json``) scores them. They
follow the ones Kummerfeld et al. (ACL 2019) found useful: time gap and distance, explicit replies
and @-mentions, names in the text (at the start or anywhere), the speaker's and the addressee's own
recent messages, who the earlier message was addressed to, the earlier thread's shape, and lexical
overlap weighted by an online IDF.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import cast

from memory.text import normalize

_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))

DIST_EDGES = (1, 2, 3, 4, 5, 6, 9, 13, 21, 41)  # rank among earlier non-system messages
GAP_EDGES = (60, 120, 180, 300, 600, 1200)  # seconds
LEX_EDGES = (0.01, 2.0, 4.0, 7.0, 11.0)  # summed IDF of shared words
SIZE_EDGES = (1, 2, 3, 6, 12)
LEN_EDGES = (1, 3, 6, 12, 25)  # words in a message


def bucket(value: float, edges: tuple[float, ...]) -> int:
    """Index of the bucket ``value`` falls in: 0 below ``edges[0]``, ``len(edges)`` at the top."""
    return bisect_right(edges, value)


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _has_cjk(text: str) -> bool:
    return any(lo <= ord(ch) <= hi for ch in text for lo, hi in _CJK_RANGES)


def find_names(text: str, names: dict[str, str], skip: str, min_chars: int) -> tuple[set[str], set[str]]:
    """Speakers named in ``text`` (already normalised): (named at the start, named elsewhere).

    ``names`` maps a normalised name to its speaker id; ``skip`` (the author) is ignored. Latin names
    must stand as whole words; names with CJK characters match as substrings.
    """
    start: set[str] = set()
    anywhere: set[str] = set()
    for name, speaker in names.items():
        if speaker == skip or len(name) < min_chars or speaker in start:
            continue
        at = text.find(name)
        if at < 0:
            continue
        bounded = not _has_cjk(name)
        while at >= 0:
            end = at + len(name)
            ok = not bounded or (
                not (at > 0 and _is_word_char(name[0]) and _is_word_char(text[at - 1]))
                and not (end < len(text) and _is_word_char(name[-1]) and _is_word_char(text[end]))
            )
            if ok:
                if not any(_is_word_char(ch) for ch in text[:at]):
                    start.add(speaker)
                    anywhere.discard(speaker)
                else:
                    anywhere.add(speaker)
                break
            at = text.find(name, at + 1)
    return start, anywhere


@dataclass(slots=True)
class Entry:
    """What the window remembers of one earlier message."""

    key: str
    t: float  # POSIX seconds
    speaker: str
    thread: str
    words: frozenset[str]
    addressed: frozenset[str]  # speakers it was addressed to (named at the start, @, reply target)
    named: frozenset[str]  # speakers named elsewhere in it
    question: bool
    system: bool
    ordinal: int

    def to_json(self) -> list[object]:
        return [
            self.key,
            self.t,
            self.speaker,
            self.thread,
            sorted(self.words),
            sorted(self.addressed),
            sorted(self.named),
            self.question,
            self.system,
            self.ordinal,
        ]

    @classmethod
    def from_json(cls, data: list[object]) -> Entry:
        key, t, speaker, thread, words, addressed, named, question, system, ordinal = data
        return cls(
            str(key),
            float(cast(float, t)),
            str(speaker),
            str(thread),
            frozenset(cast(list[str], words)),
            frozenset(cast(list[str], addressed)),
            frozenset(cast(list[str], named)),
            bool(question),
            bool(system),
            int(cast(int, ordinal)),
        )


@dataclass(slots=True)
class Incoming:
    """The new message, analysed once."""

    speaker: str
    t: float
    words: frozenset[str]
    addressed: frozenset[str]
    named: frozenset[str]
    question: bool
    n_words: int
    reply_to: str | None = None
    idf: dict[str, float] = field(default_factory=dict)


def normalize_name(name: str) -> str:
    """The form names are matched in: NFKC, case-folded, trimmed, a leading @ dropped."""
    return normalize(name).lstrip("@").strip()


def idf(df: int, n_docs: int) -> float:
    """Smoothed inverse document frequency."""
    return math.log((n_docs + 1) / (df + 1))


def candidate_features(m: Incoming, window: list[Entry]) -> list[tuple[Entry, list[str]]]:
    """Feature names for linking ``m`` to each non-system entry of ``window`` (oldest first)."""
    threads: dict[str, list[Entry]] = {}
    last_of_speaker: dict[str, Entry] = {}
    speaker_rank: dict[str, int] = {}
    rank_of: dict[str, int] = {}
    last_addressing_m: Entry | None = None
    for e in window:
        if e.system:
            continue
        threads.setdefault(e.thread, []).append(e)
        last_of_speaker[e.speaker] = e
        if m.speaker in e.addressed:
            last_addressing_m = e
    for e in reversed(window):
        if e.system:
            continue
        speaker_rank[e.speaker] = speaker_rank.get(e.speaker, 0) + 1
        rank_of[e.key] = speaker_rank[e.speaker]

    shared: dict[str, frozenset[str]] = {}
    thread_shared: dict[str, set[str]] = {}
    thread_speakers: dict[str, set[str]] = {}
    for thread, entries in threads.items():
        acc: set[str] = set()
        for e in entries:
            common = m.words & e.words
            shared[e.key] = common
            acc |= common
        thread_shared[thread] = acc
        thread_speakers[thread] = {e.speaker for e in entries}

    def lex(words: frozenset[str] | set[str]) -> int:
        return bucket(sum(m.idf.get(w, 0.0) for w in words), LEX_EDGES)

    addressee_last = {last_of_speaker[s].key for s in m.addressed if s in last_of_speaker}
    out: list[tuple[Entry, list[str]]] = []
    candidates = [e for e in window if not e.system]
    total = len(candidates)
    for pos, c in enumerate(candidates):
        dist = bucket(total - pos, DIST_EDGES)
        gap = bucket(max(0.0, m.t - c.t), GAP_EDGES)
        members = threads[c.thread]
        same = c.speaker == m.speaker
        f = [
            f"dist:{dist}",
            f"gap:{gap}",
            f"lex:{lex(shared[c.key])}",
            f"tlex:{lex(thread_shared[c.thread])}",
            f"tsize:{bucket(len(members), SIZE_EDGES)}",
        ]
        if m.reply_to is not None and m.reply_to == c.key:
            f.append("reply")
        if same:
            f.append(f"own:{gap}")
            if last_of_speaker.get(m.speaker) is c:
                f.append(f"own_last:{gap}")
        if c.speaker in m.addressed:
            f.append("addr")
            if c.key in addressee_last:
                f.append(f"addr_last:{gap}")
        elif m.addressed:
            f.append("addr_other")
            if m.addressed & thread_speakers[c.thread]:
                f.append("addr_in_thread")
        if c.speaker in m.named:
            f.append("named")
            if last_of_speaker.get(c.speaker) is c:
                f.append("named_last")
        if m.speaker in c.addressed:
            f.append("to_me")
            if c is last_addressing_m:
                f.append(f"to_me_last:{gap}")
        elif c.addressed and not same:
            f.append("to_other")
        if m.speaker in c.named:
            f.append("named_me")
        if members[-1] is c:
            f.append("thread_last")
        if m.speaker in thread_speakers[c.thread]:
            f.append("thread_has_me")
        if not same and rank_of[c.key] == 1:
            f.append("their_last")
        if c.question:
            f.append("c_question")
        out.append((c, f))
    return out


def new_thread_features(m: Incoming, window: list[Entry]) -> list[str]:
    """Feature names for "``m`` starts a new thread"."""
    f = ["new", f"new_len:{bucket(m.n_words, LEN_EDGES)}"]
    own = [e for e in window if e.speaker == m.speaker and not e.system]
    f.append(f"new_own_gap:{bucket(m.t - own[-1].t, GAP_EDGES)}" if own else "new_first")
    if m.addressed:
        f.append("new_addr")
    if m.named:
        f.append("new_named")
    if m.question:
        f.append("new_question")
    if any(m.speaker in e.addressed for e in window[-20:]):
        f.append("new_was_addressed")
    if m.reply_to is not None:
        f.append("new_reply")
    return f
