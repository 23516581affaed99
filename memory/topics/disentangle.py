"""Online thread disentanglement: which conversation does each new chat message belong to?

The :class:`Disentangler` sees a chat's messages one at a time, in order, and decides each message's
thread from earlier messages only: a linear model scores linking the message to every earlier
message of a recent window, against starting a new thread, and the best option wins. Explicit
platform replies to a remembered message always win. Its state (the window, recent thread ids and
word document frequencies) is bounded and JSON-serialisable, so a job can persist it between runs.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from memory.text import normalize, words
from memory.topics.features import (
    Entry,
    Incoming,
    candidate_features,
    find_names,
    idf,
    new_thread_features,
    normalize_name,
)
from memory.topics.message import ThreadMessage
from memory.topics.params import DisentangleParams

STATE_VERSION = 1
_QUESTION_MARKS = ("?", "？")


@lru_cache(maxsize=1)
def shipped_weights() -> dict[str, float]:
    """The feature weights learned on the IRC dev data (``model.json``, see bot/evals)."""
    text = resources.files("memory.topics").joinpath("model.json").read_text(encoding="utf-8")
    return {str(k): float(v) for k, v in json.loads(text)["weights"].items()}


@dataclass(frozen=True, slots=True)
class Option:
    """One scored choice for a message: continue ``target``'s thread, or a new thread if ``None``."""

    target: str | None
    thread: str | None
    score: float
    features: tuple[str, ...]


class Disentangler:
    """Assigns each message of one chat, online, to a thread; thread ids are the first message's key."""

    def __init__(self, params: DisentangleParams | None = None, state: dict[str, Any] | None = None) -> None:
        self.params = params or DisentangleParams()
        self._weights = dict(self.params.weights) if self.params.weights is not None else shipped_weights()
        self._window: deque[Entry] = deque()
        self._names: dict[str, tuple[str, ...]] = {}  # speaker → normalised names, speakers in window
        self._threads: OrderedDict[str, str] = OrderedDict()  # recent message key → thread
        self._df: dict[str, int] = {}
        self._docs = 0
        self._ordinal = 0
        self._cached: tuple[ThreadMessage, int, Incoming] | None = None
        if state is not None:
            self._restore(state)

    # --- the online decision ---------------------------------------------------------------------

    def assign(self, message: ThreadMessage) -> str:
        """The thread of ``message`` (an existing thread id, or a new one), recorded for later ones.

        A key seen before (within ``reply_memory``) gets its earlier answer again.
        """
        known = self._threads.get(message.key)
        if known is not None:
            return known
        thread = self.decide(message)
        self.commit(message, thread)
        return thread

    def decide(self, message: ThreadMessage) -> str:
        """The thread ``message`` would join, without recording it."""
        p = self.params
        if message.is_system and p.system_new_thread:
            return message.key
        if p.trust_reply_links and message.reply_to is not None and message.reply_to in self._threads:
            return self._threads[message.reply_to]
        best = max(self.options(message), key=lambda o: o.score)
        return best.thread if best.thread is not None else message.key

    def options(self, message: ThreadMessage) -> list[Option]:
        """Every scored choice for ``message``: new thread first, then earlier messages, oldest first.

        On a tie ``decide`` keeps the earliest option: a new thread, then the oldest message.
        """
        incoming = self._analyse(message)
        gap = self.params.max_gap_minutes * 60.0
        # Both ways: history imported after live messages is older than the window it meets.
        window = [e for e in self._window if incoming.t - gap <= e.t <= incoming.t + gap]
        w = self._weights
        new_feats = new_thread_features(incoming, window)
        out = [
            Option(
                None,
                None,
                math.fsum(w.get(f, 0.0) for f in new_feats) + self.params.new_thread_bias,
                tuple(new_feats),
            )
        ]
        for entry, feats in candidate_features(incoming, window):
            out.append(Option(entry.key, entry.thread, math.fsum(w.get(f, 0.0) for f in feats), tuple(feats)))
        return out

    def commit(self, message: ThreadMessage, thread: str) -> None:
        """Record ``message`` as part of ``thread`` (``assign`` does this; training forces threads)."""
        incoming = self._analyse(message)
        p = self.params
        self._ordinal += 1
        entry = Entry(
            message.key,
            incoming.t,
            message.speaker,
            thread,
            incoming.words,
            incoming.addressed,
            incoming.named,
            incoming.question,
            message.is_system,
            self._ordinal,
        )
        self._window.append(entry)
        names = {normalize_name(n) for n in (message.speaker, *message.speaker_names)}
        self._names[message.speaker] = tuple(sorted(n for n in names if n))
        self._trim_window()
        self._threads[message.key] = thread
        self._threads.move_to_end(message.key)
        while len(self._threads) > max(p.reply_memory, p.max_candidates):
            self._threads.popitem(last=False)
        if not message.is_system:
            self._docs += 1
            for word in incoming.words:
                self._df[word] = self._df.get(word, 0) + 1
            if len(self._df) > p.idf_vocab:
                keep = sorted(self._df.items(), key=lambda kv: (-kv[1], kv[0]))[: p.idf_vocab * 4 // 5]
                self._df = dict(keep)

    def forget(self, key: str, text: str) -> None:
        """Take out a message that is being deleted (committed earlier, not a system line): its window
        entry, its thread link, and its words from the document counts (its window words, else those
        of ``text`` as `commit` counted them), so none of its words stays in the state."""
        entries = [e for e in self._window if e.key == key]
        if entries:
            gone = set().union(*(e.words for e in entries))
            self._window = deque(e for e in self._window if e.key != key)
        else:
            gone = set(list(dict.fromkeys(words(text)))[: self.params.max_words])
        self._threads.pop(key, None)
        self._docs = max(self._docs - 1, 0)
        for word in gone:
            left = self._df.get(word, 0) - 1
            if left > 0:
                self._df[word] = left
            else:
                self._df.pop(word, None)
        self._cached = None
        self._trim_window()

    def _trim_window(self) -> None:
        limit = self.params.max_candidates
        non_system = sum(1 for e in self._window if not e.system)
        while self._window and (non_system > limit or len(self._window) > 2 * limit):
            dropped = self._window.popleft()
            non_system -= not dropped.system
        alive = {e.speaker for e in self._window}
        for speaker in [s for s in self._names if s not in alive]:
            del self._names[speaker]

    def _analyse(self, message: ThreadMessage) -> Incoming:
        # options() then commit() analyse the same message against the same state: do it once.
        if self._cached is not None and self._cached[0] is message and self._cached[1] == self._ordinal:
            return self._cached[2]
        incoming = self._analyse_fresh(message)
        self._cached = (message, self._ordinal, incoming)
        return incoming

    def _analyse_fresh(self, message: ThreadMessage) -> Incoming:
        text = normalize(message.text)
        tokens: dict[str, None] = {}
        all_words = words(message.text) if not message.is_system else []
        for tok in all_words:
            if len(tokens) >= self.params.max_words:
                break
            tokens.setdefault(tok, None)
        lookup = {name: speaker for speaker, names in self._names.items() for name in names}
        start, anywhere = find_names(text, lookup, message.speaker, self.params.min_name_chars)
        addressed = set(start) | {s for s in message.mentions if s != message.speaker}
        if message.reply_to is not None:
            for e in self._window:
                if e.key == message.reply_to and e.speaker != message.speaker:
                    addressed.add(e.speaker)
        word_set = frozenset(tokens)
        return Incoming(
            speaker=message.speaker,
            t=message.time.timestamp(),
            words=word_set,
            addressed=frozenset(addressed),
            named=frozenset(anywhere - addressed),
            question=any(q in message.text for q in _QUESTION_MARKS),
            n_words=len(all_words),
            reply_to=message.reply_to,
            idf={w: idf(self._df.get(w, 0), self._docs) for w in word_set},
        )

    # --- persistence -----------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot; ``Disentangler(params, state)`` continues exactly from it."""
        return {
            "version": STATE_VERSION,
            "window": [e.to_json() for e in self._window],
            "names": {s: list(n) for s, n in self._names.items()},
            "threads": [[k, t] for k, t in self._threads.items()],
            "df": dict(self._df),
            "docs": self._docs,
            "ordinal": self._ordinal,
        }

    def _restore(self, state: dict[str, Any]) -> None:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported disentangler state version: {state.get('version')!r}")
        try:
            self._window = deque(Entry.from_json(e) for e in state["window"])
            self._names = {str(s): tuple(n) for s, n in state["names"].items()}
            self._threads = OrderedDict((str(k), str(t)) for k, t in state["threads"])
            self._df = {str(w): int(c) for w, c in state["df"].items()}
            self._docs = int(state["docs"])
            self._ordinal = int(state["ordinal"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed disentangler state: {exc}") from exc


def rekey_state(state: dict[str, Any], rename: Callable[[str], str]) -> dict[str, Any]:
    """`state` (from `Disentangler.state`) with every message key and thread id passed through
    `rename`: its chat's messages were given new platform ids (a chat merged into another), and a new
    message reusing an old id must not be taken for the earlier one or join its thread."""
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"unsupported disentangler state version: {state.get('version')!r}")
    window = [Entry.from_json(e) for e in state["window"]]
    return {
        **state,
        "window": [replace(e, key=rename(e.key), thread=rename(e.thread)).to_json() for e in window],
        "threads": [[rename(str(k)), rename(str(t))] for k, t in state["threads"]],
    }
