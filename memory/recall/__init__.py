"""Recall over raw messages and ChatHistory, scoped to a chat: one hybrid pipeline used everywhere."""

from memory.recall.persons import MemberResolver, NamedPerson, PersonRef, PersonResolver
from memory.recall.pipeline import Recaller
from memory.recall.query import RecallHit, RecallQuery, TimeRange
from memory.recall.scope import ScopePolicy
from memory.recall.settings import RecallSettings, RecallWeights

__all__ = [
    "MemberResolver",
    "NamedPerson",
    "PersonRef",
    "PersonResolver",
    "RecallHit",
    "RecallQuery",
    "RecallSettings",
    "RecallWeights",
    "Recaller",
    "ScopePolicy",
    "TimeRange",
]
