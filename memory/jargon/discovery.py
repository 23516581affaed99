"""Offline jargon discovery: statistical new-word finding over one chat, no model needed.

A string of the window is proposed when, in the chat's recent history (window included):
1. it recurs: at least `min_df` messages by at least `min_speakers` people contain it;
2. it is a unit on both sides (closure and boundary entropy): no single character precedes or follows
   it in more than `closure` of its occurrences (else it is a piece of a longer string, which is
   considered on its own), and the left and right neighbours vary (entropy ≥ `min_entropy`);
3. it holds together (cohesion): for every way of cutting it in two, the parts co-occur far more
   often than chance (normalised pointwise mutual information ≥ `min_cohesion`, this chat's counts);
4. it is unusual for ordinary text (lift): it occurs `exp(min_lift)` times more often than the
   background word model (jieba's dictionary frequencies, see background.py) predicts for a text of
   the history's size. This keeps out everyday words ("我们", "真的") and phrases ("我也是") that recur
   in every chat. A string members asked the meaning of in the history ("狗托是什么意思") may be
   `ASKED_LIFT` less unusual: the question says the group uses it as a word of its own.
A string that is only a shorter one with a function word glued on (a leading preposition or motion
verb, "去上香"; a trailing particle, "刷墙了"; a time word at either edge, "下次开炉") is proposed as
the shorter one when that is a unit on both sides itself: the group's word is "上香", which an
everyday dictionary word's lift would otherwise keep out while the glued string's rarity let it in.
Candidates are enumerated from the window only: from every start, the prefixes that are frequent
(Apriori pruning: a string is never more frequent than its prefix) and right-closed; Chinese edges may
sit anywhere, Latin edges only on word boundaries. Survivors pass the shared filters (filters.py),
and the `max_candidates` best by score are proposed (the batch limit is checked on those).

`discover` builds the statistics from scratch; `Discoverer` keeps a `HistoryStats` between runs (feed
it the new messages, it evicts the oldest), which is what a job running every ~20 s should use.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace

from memory.jargon.background import BackgroundModel, default_background
from memory.jargon.filters import (
    LEADING_PARTICLES,
    FilterParams,
    filter_candidates,
    is_time_word,
    mask_mentions,
    usable_messages,
)
from memory.jargon.spans import is_latin, latin_edges_ok, word_runs
from memory.jargon.stats import HistoryStats, Occurrences
from memory.jargon.types import Candidate, MinerMessage
from memory.offload import runs, thread_work_in_runs
from memory.persons.names import pos_tags
from memory.text.mapped import MappedText, normalize_mapped

log = logging.getLogger(__name__)

# Prepositions and motion verbs that go before a word in a sentence ("去上香", "在老地方", "跟刷墙"): a
# string starting with one is that word in its sentence, not a longer word.
GLUE_BEFORE: frozenset[str] = frozenset("去来到回在跟给把被从往向对和与")

SCAN_CHARS_PER_WINDOW = 2_000_000_000
"""The most characters of history one window's discovery reads (each string counted or located is a
scan of the whole history; about a second of CPU). Chat-sized messages stay far below it: the jargon
evaluation's busiest window reads 1.5e8. A window of long, repetitive messages over a long history
could otherwise read without end (20 messages of 20,000 characters took a minute, 200 over ten);
past it the rest of the window is left out, with a warning."""


@dataclass(frozen=True, slots=True)
class DiscoveryParams:
    """Thresholds of offline discovery (see the module docstring for what each one tests)."""

    min_len: int = 2
    max_len: int = 16
    min_df: int = 3
    min_speakers: int = 2
    closure: float = 0.75
    min_entropy: float = 0.8
    min_cohesion: float = 0.3
    min_lift: float = 11.0
    max_candidates: int = 20
    filters: FilterParams = field(default_factory=FilterParams)


@dataclass(frozen=True, slots=True)
class Scored:
    """A string that passed discovery's statistical tests, with the numbers behind its score."""

    text: str
    df: int
    speakers: int
    lift: float
    cohesion: float
    entropy: float

    @property
    def score(self) -> float:
        """Ranking score: lift, damped when the boundaries are barely varied."""
        return self.lift * min(1.0, self.entropy)


def _next_end(text: str, j: int) -> int:
    """The end one character past `j`, stepping over a single inner space ("he" → "he t")."""
    return j + 2 if j < len(text) - 1 and text[j] == " " else j + 1


def _spans(
    text: str,
    stats: HistoryStats,
    params: DiscoveryParams,
    seen: set[tuple[object, ...]] | None = None,
    scan_limit: float = math.inf,
) -> set[str]:
    """Frequent, right-closed strings of one normalised window text (see module docstring).

    What a start position yields depends only on the characters from one before it to `max_len`
    after it and on how far the run and the text go on, so a position whose surroundings were
    already looked at (in `seen`, which may be shared by the texts of one window) is skipped: a
    flood of "哈哈哈…" or of one pasted line costs no more than one copy of it. No position is
    looked at once `stats.scanned` reaches `scan_limit`."""
    found: set[str] = set()
    seen = set() if seen is None else seen
    reach = params.max_len + 2
    for run_start, run_end in word_runs(text):
        for i in range(run_start, run_end):
            if stats.scanned >= scan_limit:
                return found
            if text[i] == " " or (i > run_start and is_latin(text[i]) and is_latin(text[i - 1])):
                continue
            context = (
                i > 0,
                i > run_start,
                text[max(i - 1, 0) : i + params.max_len + 1],
                min(run_end - i, reach),
                min(len(text) - i, reach),
            )
            if context in seen:
                continue
            seen.add(context)
            counts: dict[int, int] = {}
            j = i + 1
            while j <= min(run_end, i + params.max_len):
                c = stats.count(text[i:j])
                if c < params.min_df:
                    break
                counts[j] = c
                j += 1
            for end, c in counts.items():
                if end - i < params.min_len or text[end - 1] == " ":
                    continue
                if not latin_edges_ok(text, i, end):
                    continue
                nxt = _next_end(text, end)
                if end < run_end and counts.get(nxt, 0) >= params.closure * c:
                    continue
                found.add(text[i:end])
    return found


def _cohesion(s: str, stats: HistoryStats, count: int) -> float:
    """Minimum normalised PMI over the two-part cuts of `s` (1 = the parts only occur together).

    Normalising by -log P(s) keeps the scale independent of the history's size, so a quiet chat's
    "蚌埠住|了" (where "了" is everywhere) is judged like a busy chat's.
    """
    n = max(stats.n_chars, 1)
    self_info = math.log(n / max(count, 1))
    if self_info <= 0:
        return 1.0
    best = math.inf
    for k in range(1, len(s)):
        left, right = stats.count(s[:k]), stats.count(s[k:])
        best = min(best, math.log(count * n / max(left * right, 1)) / self_info)
    return best


def _is_unit(occ: Occurrences, params: DiscoveryParams) -> bool:
    """Whether a string occurring as `occ` recurs (messages, speakers) and is a unit on both sides
    (closure and boundary entropy)."""
    if occ.df < params.min_df or len(occ.speakers) < params.min_speakers:
        return False
    if max(occ.top_share("left"), occ.top_share("right")) >= params.closure:
        return False
    return min(occ.entropy("left"), occ.entropy("right")) >= params.min_entropy


def _without_glue(s: str) -> str:
    """`s` without a function word at its edge: `GLUE_BEFORE` first, a particle last, or one of jieba's
    time words first or last ("下次开炉", "开炉周五"); `s` itself when there is none."""
    if s[0] in GLUE_BEFORE:
        return s[1:]
    if s[-1] in LEADING_PARTICLES:
        return s[:-1]
    tagged = pos_tags(s)
    if len(tagged) < 2 or "".join(word for word, _ in tagged) != s:
        return s
    if is_time_word(*tagged[0]):
        return s[len(tagged[0][0]) :]
    if is_time_word(*tagged[-1]):
        return s[: -len(tagged[-1][0])]
    return s


def unglued(s: str, stats: HistoryStats, params: DiscoveryParams) -> str:
    """`s` without a function or time word at its edge (`_without_glue`) when what is left is long
    enough, recurs and is a unit on both sides itself; else `s`."""
    shorter = _without_glue(s)
    if shorter == s or len(shorter) < params.min_len or stats.count(shorter) < params.min_df:
        return s
    return shorter if _is_unit(stats.occurrences(shorter), params) else s


def score_string(
    s: str, stats: HistoryStats, params: DiscoveryParams, background: BackgroundModel
) -> Scored | None:
    """The statistics of normalised `s` if it passes every test of discovery, else None."""
    count = stats.count(s)
    if count < params.min_df:
        return None
    expected = stats.n_chars * math.exp(background.log_prob(s))
    if math.log(count / expected) < params.min_lift:
        return None
    occ: Occurrences = stats.occurrences(s)
    if not _is_unit(occ, params):
        return None
    entropy = min(occ.entropy("left"), occ.entropy("right"))
    lift = math.log(occ.total / expected)
    if lift < params.min_lift:
        return None
    cohesion = _cohesion(s, stats, occ.total)
    if cohesion < params.min_cohesion:
        return None
    return Scored(s, occ.df, len(occ.speakers), lift, cohesion, entropy)


def _evidence(s: str, window: Sequence[tuple[MinerMessage, MappedText]]) -> tuple[str, tuple[str, ...]]:
    """The original spelling of `s` (first window occurrence) and the window keys containing it."""
    content = ""
    keys: list[str] = []
    for message, mapped in window:
        pos = mapped.text.find(s)
        while pos >= 0 and not latin_edges_ok(mapped.text, pos, pos + len(s)):
            pos = mapped.text.find(s, pos + 1)
        if pos >= 0:
            keys.append(message.key)
            content = content or mapped.original_text(pos, pos + len(s))
    return content, tuple(keys)


# Discovery goes in steps, each over part of its input, so that `discover_in_runs` can take every step
# run by run (memory.offload) and come to what `discover_in` finds in one call.
Mapped = tuple[MinerMessage, MappedText]


def _mapped(messages: Sequence[MinerMessage]) -> list[Mapped]:
    """Messages with their normalised text, mentions masked."""
    return [(m, normalize_mapped(mask_mentions(m.text))) for m in messages]


def _spans_of(
    texts: Sequence[Mapped],
    stats: HistoryStats,
    params: DiscoveryParams,
    seen: set[tuple[object, ...]],
    scan_limit: float,
) -> set[str]:
    """The strings `_spans` finds in some of a window's texts (`seen` and `scan_limit` shared by the
    whole window)."""
    strings: set[str] = set()
    for _, text in texts:
        strings |= _spans(text.text, stats, params, seen, scan_limit)
    return strings


def _passing(
    strings: Sequence[str],
    stats: HistoryStats,
    params: DiscoveryParams,
    background: BackgroundModel,
    scan_limit: float,
) -> list[tuple[str, float]]:
    """Those of `strings` that pass discovery's tests, with their score, each without a function word
    glued on (`unglued`); none is tested once `stats.scanned` reaches `scan_limit`."""
    found = []
    for s in strings:
        if stats.scanned >= scan_limit:
            break
        scored = score_string(s, stats, params, background)
        if scored is not None:
            found.append((unglued(s, stats, params), round(scored.score, 4)))
    return found


ASKED_LIFT = 3.0
"""How much less unusual than `min_lift` a string may be when members asked what it means."""


def _asked(
    mapped: Sequence[Mapped],
    stats: HistoryStats,
    params: DiscoveryParams,
    background: BackgroundModel,
    scan_limit: float,
    passing: Sequence[tuple[str, float]],
) -> list[tuple[str, float]]:
    """The strings of the window that the history asks the meaning of ("狗托是什么意思": a sign of the
    group's slang) and that pass discovery's tests with a lift `ASKED_LIFT` lower, beside `passing`."""
    have = {s for s, _ in passing}
    asked = sorted(
        s
        for s in stats.asked() - have
        if params.min_len <= len(s) <= params.max_len and any(s in text.text for _, text in mapped)
    )
    if not asked:
        return []
    relaxed = replace(params, min_lift=params.min_lift - ASKED_LIFT)
    return _passing(asked, stats, relaxed, background, scan_limit)


def _with_evidence(passing: Sequence[tuple[str, float]], mapped: Sequence[Mapped]) -> list[Candidate]:
    """Candidates of the passing strings found in the window's texts (as written there)."""
    candidates = []
    for s, score in passing:
        content, keys = _evidence(s, mapped)
        if keys:
            candidates.append(Candidate(content, keys, score))
    return candidates


def _proposed(
    candidates: Sequence[Candidate],
    usable: Sequence[MinerMessage],
    params: DiscoveryParams,
    exclude: Collection[str],
    names: Iterable[str],
) -> list[Candidate]:
    # What discovery proposes is its `max_candidates` best: the batch limit is checked on those.
    best = params.max_candidates
    return filter_candidates(candidates, usable, params.filters, names=names, exclude=exclude, best=best).kept


def discover_in(
    stats: HistoryStats,
    window: Sequence[MinerMessage],
    params: DiscoveryParams,
    exclude: Collection[str] = (),
    names: Iterable[str] = (),
    background: BackgroundModel | None = None,
) -> list[Candidate]:
    """Candidates occurring in `window`, judged on `stats` (which must already hold the window)."""
    background = background or default_background()
    usable = usable_messages(window)
    mapped = _mapped(usable)
    scan_limit = stats.scanned + SCAN_CHARS_PER_WINDOW
    strings = _spans_of(mapped, stats, params, set(), scan_limit)
    passing = _passing(sorted(strings), stats, params, background, scan_limit)
    passing += _asked(mapped, stats, params, background, scan_limit, passing)
    _warn_if_cut(stats, scan_limit, mapped)
    return _proposed(_with_evidence(passing, mapped), usable, params, exclude, names)


async def discover_in_runs(
    stats: HistoryStats,
    window: Sequence[MinerMessage],
    params: DiscoveryParams,
    exclude: Collection[str] = (),
    names: Iterable[str] = (),
) -> list[Candidate]:
    """`discover_in`, each step taken in runs of about RUN_CHARS characters (memory.offload), each
    run one worker-thread call: a job cancelled at shutdown stops after the run in hand rather than
    after a whole window of long messages. The same candidates as `discover_in`; `stats` must not
    change meanwhile."""
    background = default_background()
    usable = usable_messages(window)
    mapped = await thread_work_in_runs(usable, _text_chars, _mapped)
    strings: set[str] = set()
    seen: set[tuple[object, ...]] = set()
    scan_limit = stats.scanned + SCAN_CHARS_PER_WINDOW
    for run in runs(mapped, _mapped_chars):
        strings |= await asyncio.to_thread(_spans_of, run, stats, params, seen, scan_limit)
    passing = await thread_work_in_runs(
        sorted(strings), len, lambda run: _passing(run, stats, params, background, scan_limit)
    )
    passing += await asyncio.to_thread(_asked, mapped, stats, params, background, scan_limit, passing)
    _warn_if_cut(stats, scan_limit, mapped)
    # Each passing string is looked for in every text of the window.
    window_chars = sum(_mapped_chars(item) for item in mapped)
    candidates = await thread_work_in_runs(
        passing, lambda _item: window_chars, lambda run: _with_evidence(run, mapped)
    )
    return _proposed(candidates, usable, params, exclude, list(names))


def _warn_if_cut(stats: HistoryStats, scan_limit: float, mapped: Sequence[Mapped]) -> None:
    if stats.scanned >= scan_limit:
        log.warning(
            "jargon discovery read its limit of history for a window of %d messages (%d characters) "
            "over %d characters of history; the rest of the window is left out",
            len(mapped),
            sum(_mapped_chars(item) for item in mapped),
            stats.n_chars,
        )


def _text_chars(message: MinerMessage) -> int:
    return len(message.text)


def _mapped_chars(item: Mapped) -> int:
    return len(item[1].text)


def discover(
    window: Sequence[MinerMessage],
    history: Sequence[MinerMessage],
    params: DiscoveryParams | None = None,
    exclude: Collection[str] = (),
    names: Iterable[str] = (),
) -> list[Candidate]:
    """Jargon candidates of `window` judged on the chat's `history` (oldest first).

    `history` may or may not already contain the window's messages (duplicates by key are ignored).
    `exclude` are terms already in the dictionary, `names` people's names and aliases; both are
    compared after normalisation. Returns candidates best first.
    """
    params = params or DiscoveryParams()
    stats = HistoryStats.build([*history, *window])
    return discover_in(stats, window, params, exclude, names)


class Discoverer:
    """Discovery with statistics kept between runs: the shape a scheduled per-chat job uses.

    `run(window)` adds the window to the history (evicting beyond `history_size`) and returns its
    candidates; `observe` adds messages without mining them (a new one, filled from stored messages
    after a restart, in runs).
    """

    def __init__(self, params: DiscoveryParams | None = None, history_size: int = 3000) -> None:
        self.params = params or DiscoveryParams()
        self.history_size = history_size
        self.stats = HistoryStats(capacity=history_size)

    def observe(self, messages: Iterable[MinerMessage]) -> None:
        """Add messages to the history without mining them."""
        self.stats.extend(messages)

    def run(
        self, window: Sequence[MinerMessage], exclude: Collection[str] = (), names: Iterable[str] = ()
    ) -> list[Candidate]:
        """Add `window` to the history, then return its candidates (best first)."""
        self.observe(window)
        return self.candidates(window, exclude, names)

    def candidates(
        self, window: Sequence[MinerMessage], exclude: Collection[str] = (), names: Iterable[str] = ()
    ) -> list[Candidate]:
        """The candidates of `window`, which the history must already hold (best first)."""
        return discover_in(self.stats, window, self.params, exclude, names)

    async def candidates_in_runs(
        self, window: Sequence[MinerMessage], exclude: Collection[str] = (), names: Iterable[str] = ()
    ) -> list[Candidate]:
        """`candidates`, worked out run by run on worker threads (see `discover_in_runs`)."""
        return await discover_in_runs(self.stats, window, self.params, exclude, names)
