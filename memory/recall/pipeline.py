"""The one recall used everywhere (reply context, /recall, admin search, the eval), as small steps:

    plan (keywords and their rarity, quotes, names → people, time expressions, group slang ↔ its meaning)
    → candidates (BM25 over messages, turn windows, ChatHistory and preference docs; dense;
      slang expansion; time/person fallbacks)
    → fusion (reciprocal rank) → context spread (neighbouring turns)
    → scope check → signals → dedupe (duplicates reinforce) → salience → [optional LLM rerank]

No LLM decides whether to recall. Dense search uses stored vectors only; the question itself is
embedded under a timeout and recall goes on lexically when that fails.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.store import VectorIndex
from memory.messages import neighbours
from memory.ports import Embedder, LLMPort
from memory.recall import candidates as cand
from memory.recall.dedupe import merge_duplicates
from memory.recall.feedback import expansion_terms, feedback_match
from memory.recall.fusion import reciprocal_rank_fusion, score_fusion
from memory.recall.glossary import JargonGlossary
from memory.recall.keywords import Keyword, match_any, query_keywords, remove_spans
from memory.recall.load import in_scope, load_hits
from memory.recall.persons import MemberResolver, NamedPerson, PersonRef, PersonResolver
from memory.recall.query import RecallHit, RecallQuery
from memory.recall.quotes import extract_quotes
from memory.recall.rarity import keyword_rarity
from memory.recall.rerank import rerank
from memory.recall.salience import salience
from memory.recall.scope import ScopePolicy
from memory.recall.settings import RecallSettings
from memory.recall.signals import QuestionSignals, apply_signals
from memory.recall.timeexpr import TimeHint, in_zone, parse_time_hints
from memory.storage import Database
from memory.storage.fts import indexed_tokens, phrase_expression
from memory.text import search_terms, truncate
from memory.turn_windows import WINDOWS_FTS

log = logging.getLogger(__name__)

Key = tuple[str, int]
Ranking = tuple[str, float, Sequence[tuple[Key, float]]]
SPREAD_FROM = 50
# The longest question recall reads, in characters: a question is short, and every step (names, time
# words, keywords, jieba) costs time on the event loop in proportion to it; a pasted article or a
# flood message would otherwise hold the bot for a minute.
MAX_QUESTION_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Plan:
    """What recall reads from the question before touching the indexes."""

    signals: QuestionSignals
    match: str | None
    people: dict[int, PersonRef]
    person_only: tuple[int, ...]
    jargon: str | None = None
    phrases: str | None = None

    @property
    def lists(self) -> bool:
        """Whether the question is only names and times ("Lily 说过什么", "上周三说了什么"): its answer
        is what was said by them or then, newest first, not the turns around it."""
        if self.person_only:
            return True
        no_words = self.match is None and self.phrases is None and self.jargon is None
        return no_words and bool(self.signals.hints or self.signals.named)


class Recaller:
    """Hybrid recall over one database. `scope` decides which chats a chat's questions may read
    (`chats_for`); `settings`, `embedder`, `resolver`, `glossary` and `scope` may be swapped at any
    time."""

    def __init__(
        self,
        db: Database,
        settings: RecallSettings | None = None,
        embedder: Embedder | None = None,
        resolver: PersonResolver | None = None,
        llm: LLMPort | None = None,
        glossary: JargonGlossary | None = None,
    ) -> None:
        self.db = db
        self.settings = settings or RecallSettings()
        self.embedder = embedder
        self.resolver: PersonResolver = resolver or MemberResolver()
        self.llm = llm
        self.glossary = glossary
        self.scope = ScopePolicy()
        self.vectors = VectorIndex()

    async def chats_for(self, chat_id: int, asker_person_id: int | None = None) -> tuple[int, ...]:
        """The chats a question asked in `chat_id` may recall from, under `self.scope`."""
        async with self.db.read() as session:
            return await self.scope.chats_for(session, chat_id, asker_person_id)

    async def recall(self, query: RecallQuery) -> list[RecallHit]:
        """The best `query.limit` memories for the question, inside its scope, best first."""
        if not query.chat_ids or query.limit <= 0:
            return []
        if len(query.text) > MAX_QUESTION_CHARS:
            query = replace(query, text=truncate(query.text, MAX_QUESTION_CHARS, ellipsis=""))
        query_vector = await self._embed_question(query.text)
        async with self.db.read() as session:
            plan = await self._plan(session, query)
            scope = cand.Scope(
                tuple(query.chat_ids),
                query.time_range,
                tuple(query.person_ids),
                tuple(plan.people[p].platform_user_id for p in query.person_ids if p in plan.people),
            )
            rankings = await self._candidates(session, query, plan, scope, query_vector)
            if self.settings.fusion == "score":
                fused = score_fusion([(weight, found) for _, weight, found in rankings])
            else:
                fused = _rank_fusion(rankings, self.settings.weights.rrf_k)
            if not plan.lists:
                fused = await self._spread(session, fused)
            keep = sorted(fused, key=lambda k: -fused[k])[: max(self.settings.candidates, query.limit)]
            display = {p.person_id: p.display for p in plan.people.values()}
            loaded = await load_hits(session, keep, display)
            topic_keys = await self._topic_keys(session, query, scope)
        platform_ids = {p.person_id: p.platform_user_id for p in plan.people.values()}
        hits = [hit for key, hit in loaded.items() if in_scope(hit, query, platform_ids, topic_keys)]
        found_by = _found_by(rankings)
        for hit in hits:
            hit.score = fused[hit.key]
            hit.found_by = found_by.get(hit.key, {})
        apply_signals(hits, plan.signals, self.settings.weights)
        hits = merge_duplicates(hits)
        for hit in hits:
            factor = salience(hit.count + len(hit.duplicates), hit.time, query.now, self.settings.weights)
            hit.score *= factor
            hit.signals["salience"] = round(factor, 4)
        hits.sort(key=lambda h: (-h.score, h.kind, h.id))
        hits = hits[: query.limit]
        if self.settings.rerank and self.llm is not None:
            hits = await rerank(
                self.llm, query.text, hits, self.settings.rerank_top, self.settings.rerank_timeout_seconds
            )
        if plan.lists:
            hits.sort(key=lambda hit: _listing_order(hit, plan.signals.hints))
        return hits

    async def _embed_question(self, text: str) -> list[float] | None:
        if self.embedder is None or not text.strip():
            return None
        try:
            vectors = await asyncio.wait_for(
                self.embedder.embed([text]), self.settings.query_embed_timeout_seconds
            )
        except Exception as exc:  # any embedder failure degrades to lexical recall
            log.warning("question not embedded (%s); recalling lexically", str(exc) or type(exc).__name__)
            return None
        return vectors[0] if vectors else None

    async def _plan(self, session: AsyncSession, query: RecallQuery) -> Plan:
        people_list = await self.resolver.people(session, query.chat_ids)
        people = {p.person_id: p for p in people_list}
        named: list[NamedPerson] = self.resolver.named_in(people_list, query.text)
        quotes = extract_quotes(query.text)
        # A time word inside a name (周一 of 周一鸣) or a quoted phrase ("昨天的我") is no time.
        verbatim = [n.span for n in named] + [q.span for q in quotes]
        hints = [
            hint
            for hint in parse_time_hints(
                query.text, in_zone(query.now, self.settings.timezone), self.settings.numeric_date_order
            )
            if not any(_inside(hint.span, span) for span in verbatim)
        ]
        stripped = remove_spans(query.text, [n.span for n in named] + [h.span for h in hints])
        keywords: list[Keyword] = query_keywords(stripped, self.settings.stems, not (named or hints))
        person_only: tuple[int, ...] = ()
        if named and not search_terms(stripped):  # nothing but names: what is said by or of them
            keywords = query_keywords(" ".join(n.surface for n in named), self.settings.stems)
            person_only = tuple(sorted({p for n in named for p in n.person_ids}))
        rarity: dict[str, float] = {}
        if self.settings.weights.keyword_overlap > 0:
            rarity = await keyword_rarity(session, query.chat_ids, keywords)
        signals = QuestionSignals(
            keywords,
            quotes,
            named,
            hints,
            {p.person_id: p.names for p in people_list},
            {p.person_id: p.platform_user_id for p in people_list},
            rarity,
        )
        jargon = None
        if self.glossary is not None and self.settings.weights.jargon > 0:
            jargon = await self.glossary.expansion(query.chat_ids, query.text, keywords)
        phrases = [p for q in quotes if (p := phrase_expression(q.phrase)) is not None]
        return Plan(signals, match_any(keywords), people, person_only, jargon, " OR ".join(phrases) or None)

    async def _candidates(
        self,
        session: AsyncSession,
        query: RecallQuery,
        plan: Plan,
        scope: cand.Scope,
        query_vector: list[float] | None,
    ) -> list[Ranking]:
        w = self.settings.weights
        n = self.settings.candidates
        rankings: list[Ranking] = []

        def add(name: str, weight: float, found: Sequence[tuple[Key, float]]) -> None:
            if weight > 0 and found:
                rankings.append((name, weight, found))

        if plan.match is not None:
            add("lexical", w.lexical, await cand.lexical_messages(session, scope, plan.match, n))
            add("window", w.window, await cand.lexical_messages(session, scope, plan.match, n, WINDOWS_FTS))
            add("history", w.history, await cand.lexical_histories(session, scope, plan.match, n))
            add("preference", w.preference, await cand.lexical_preferences(session, scope, plan.match, n))
        if plan.jargon is not None:
            add("jargon", w.jargon, await cand.lexical_messages(session, scope, plan.jargon, n))
        if plan.phrases is not None:  # verbatim, stop words and all ("我也是" is only stop words)
            add("quote", w.quote, await cand.lexical_messages(session, scope, plan.phrases, n))
        if query_vector is not None and self.embedder is not None:
            try:
                found = await self.vectors.search(
                    session, scope.chat_ids, self.embedder.model, query_vector, n
                )
            except ValueError as exc:
                log.warning("dense recall skipped: %s", exc)
                found = []
            add("dense", w.dense, found)
        if plan.match is not None and w.feedback > 0 and rankings:
            add("feedback", w.feedback, await self._feedback(session, plan, scope, rankings))
        named = sorted({p for person in plan.signals.named for p in person.person_ids})
        if named:
            # With no words to search ("Lily 昨天说了什么"), what the people said is the answer, not a filler.
            weight = w.lexical if plan.person_only or plan.match is None else w.person_fill
            add("person", weight, await cand.messages_by_people(session, scope, named, n))
        for hint in plan.signals.hints:
            add("time_window", w.time_window, await cand.messages_in_window(session, scope, hint, n))
        return rankings

    async def _feedback(
        self,
        session: AsyncSession,
        plan: Plan,
        scope: cand.Scope,
        rankings: Sequence[Ranking],
    ) -> list[tuple[Key, float]]:
        """Pseudo-relevance feedback: a second full-text pass with the words that the best messages of
        the lists so far (lexical, windows, dense: fused) share and the rest do not.

        When the lists found no more than `feedback_docs` messages (the question's words are rare in
        the chat: "martial arts" said twice), there is no rest to tell them from: all of them are
        told from the chat's latest messages instead, so that a word they share ("kickboxing") still
        finds the turns that answer in it alone."""
        w = self.settings.weights
        fused = _rank_fusion(rankings, w.rrf_k)
        best = sorted(fused, key=lambda k: -fused[k])
        ids = [i for kind, i in best if kind == "message"][: self.settings.candidates]
        if len(ids) > w.feedback_docs:
            top_ids, rest_ids = ids[: w.feedback_docs], ids[w.feedback_docs :]
        else:
            latest = await cand.latest_messages(session, scope, self.settings.candidates)
            found = set(ids)
            top_ids, rest_ids = ids, [i for (_, i), _ in latest if i not in found]
        tokens = await indexed_tokens(session, "messages_fts", top_ids + rest_ids)
        top = [tokens.get(i, []) for i in top_ids]
        rest = [tokens.get(i, []) for i in rest_ids]
        expansion = expansion_terms(top, rest, plan.signals.keywords, w.feedback_terms)
        match = feedback_match(plan.signals.keywords, expansion)
        if match is None:
            return []
        return await cand.lexical_messages(session, scope, match, self.settings.candidates)

    async def _spread(self, session: AsyncSession, fused: dict[Key, float]) -> dict[Key, float]:
        """Context spread: each of the best messages lends a share of its score to the turns beside it."""
        weight = self.settings.weights.context_spread
        if weight <= 0:
            return fused
        best = [k for k in sorted(fused, key=lambda k: -fused[k]) if k[0] == "message"][:SPREAD_FROM]
        around = await neighbours(session, [i for _, i in best])
        spread = dict(fused)
        for key in best:
            for other in around.get(key[1], ()):
                if other is None:
                    continue
                neighbour = ("message", other)
                spread[neighbour] = spread.get(neighbour, 0.0) + weight * fused[key]
        return spread

    async def _topic_keys(
        self, session: AsyncSession, query: RecallQuery, scope: cand.Scope
    ) -> set[Key] | None:
        """With a topic: the ChatHistory rows matching it, their source messages, and matching messages."""
        if not query.topic:
            return None
        match = match_any(query_keywords(query.topic, self.settings.stems))
        if match is None:
            return set()
        keys: set[Key] = set()
        histories = await cand.lexical_histories(session, scope, match, 1000)
        keys.update(key for key, _ in histories)
        if histories:
            loaded = await load_hits(session, [key for key, _ in histories], {})
            keys.update(("message", m) for hit in loaded.values() for m in hit.source_message_ids)
        keys.update(key for key, _ in await cand.lexical_messages(session, scope, match, 5000))
        return keys


def _inside(inner: tuple[int, int], outer: tuple[int, int]) -> bool:
    """Whether span `inner` lies within the longer span `outer`."""
    return outer[0] <= inner[0] and inner[1] <= outer[1] and outer[1] - outer[0] > inner[1] - inner[0]


def _listing_order(hit: RecallHit, hints: Sequence[TimeHint]) -> tuple[float, float, int]:
    """A listing's order: inside the time asked about before around it, then newest first."""
    near = max((hint.proximity(hit.time) for hint in hints), default=1.0)
    return (-near, -hit.time.timestamp(), -hit.id)


def _rank_fusion(rankings: Sequence[Ranking], k: float) -> dict[Key, float]:
    """Reciprocal rank fusion of the candidate lists, each by its weight."""
    return reciprocal_rank_fusion([(weight, [key for key, _ in found]) for _, weight, found in rankings], k)


def _found_by(rankings: Sequence[Ranking]) -> dict[Key, dict[str, int]]:
    """For each memory, the candidate lists that found it and its rank (from 1) in each."""
    found: dict[Key, dict[str, int]] = {}
    for name, _, ranking in rankings:
        for rank, (key, _) in enumerate(ranking, start=1):
            found.setdefault(key, {}).setdefault(name, rank)
    return found
