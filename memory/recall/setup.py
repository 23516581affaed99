"""Installing recall into a MemoryService: the recaller behind `search` (with the group-slang
glossary when given), the preference-document observer on ingestion, and the recalled-memories
context section. The app and the eval both use it, so the eval measures exactly the production
recall."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.context.recall_provider import RecallProvider
from memory.ports import Embedder, LLMPort
from memory.recall.glossary import JargonGlossary
from memory.recall.persons import PersonResolver
from memory.recall.pipeline import Recaller
from memory.recall.preferences import record_preferences
from memory.recall.settings import RecallSettings

if TYPE_CHECKING:
    from memory.service import MemoryService

DEFAULT_CONTEXT_TOKENS = 600
DEFAULT_CONTEXT_LIMIT = 8


def attach_recall(
    memory: MemoryService,
    settings: RecallSettings | None = None,
    embedder: Embedder | None = None,
    resolver: PersonResolver | None = None,
    llm: LLMPort | None = None,
    glossary: JargonGlossary | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    context_limit: int = DEFAULT_CONTEXT_LIMIT,
) -> Recaller:
    """Wire hybrid recall into `memory` (idempotent: a second call replaces the first's parts)."""
    recaller = Recaller(memory.db, settings, embedder, resolver, llm, glossary)
    memory.recaller = recaller
    if record_preferences not in memory.ingestor.observers:
        memory.ingestor.observers.append(record_preferences)
    memory.context_providers[:] = [p for p in memory.context_providers if not isinstance(p, RecallProvider)]
    memory.context_providers.append(RecallProvider(recaller, context_tokens, context_limit))
    return recaller
