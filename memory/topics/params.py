"""Tunable parameters of the online thread disentangler (config section ``[topics.disentangle]``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DisentangleParams:
    """Knobs of :class:`memory.topics.Disentangler`; the defaults are the ones evaluated on IRC dev.

    - ``max_candidates``: how many earlier non-system messages a new message may link to (the window);
      the saved state holds about this many messages.
    - ``max_gap_minutes``: earlier messages more than this apart in time (older, or newer when
      history arrives out of order) are never link candidates.
    - ``reply_memory``: how many recent message keys keep their thread for explicit reply links that
      reach past the window (a key and a thread id each).
    - ``idf_vocab``: at most this many words keep document frequencies (rarest pruned first).
    - ``max_words``: distinct words kept per message for lexical overlap.
    - ``min_name_chars``: shorter names are not looked for in text (too many false hits).
    - ``new_thread_bias``: added to the "start a new thread" score; positive gives more, smaller
      threads, negative fewer, larger ones.
    - ``trust_reply_links``: an explicit platform reply to a remembered message always joins its
      thread.
    - ``system_new_thread``: join/part/rename lines always start their own thread.
    - ``weights``: feature weights overriding the shipped model (``None``: the shipped model).
    """

    max_candidates: int = 80
    max_gap_minutes: float = 60.0
    reply_memory: int = 2000
    idf_vocab: int = 5000
    max_words: int = 48
    min_name_chars: int = 2
    new_thread_bias: float = 0.0
    trust_reply_links: bool = True
    system_new_thread: bool = True
    weights: tuple[tuple[str, float], ...] | None = None

    def __post_init__(self) -> None:
        if self.max_candidates < 1:
            raise ValueError("max_candidates must be at least 1")
        if self.max_gap_minutes <= 0:
            raise ValueError("max_gap_minutes must be positive")
        if self.reply_memory < 0 or self.idf_vocab < 1 or self.max_words < 1:
            raise ValueError("reply_memory must be >= 0, idf_vocab and max_words >= 1")
