"""SQLAlchemy tables. Every memory row carries `chat_id`; times are UTC unix seconds (float)."""

from memory.models.base import Base
from memory.models.chat import Chat, ChatMember, ChatRedirect
from memory.models.chat_history import ChatHistory, ForgetLogEntry, TopicCacheEntry
from memory.models.jargon import Jargon, JargonChatCount, JargonEvidence, JargonReview
from memory.models.job_state import JobState
from memory.models.llm_usage import LlmUsage
from memory.models.message import DeletedMessage, IdFloor, Message
from memory.models.person import Person, PersonAccount
from memory.models.person_memory import (
    PersonAlias,
    PersonAliasVersion,
    PersonChatName,
    PersonFact,
    PersonForgotten,
    PersonLlmGap,
    PersonTimelineEntry,
)
from memory.models.recall import EmbeddingVector, PreferenceDoc

__all__ = [
    "Base",
    "Chat",
    "ChatHistory",
    "ChatMember",
    "ChatRedirect",
    "DeletedMessage",
    "EmbeddingVector",
    "ForgetLogEntry",
    "IdFloor",
    "Jargon",
    "JargonChatCount",
    "JargonEvidence",
    "JargonReview",
    "JobState",
    "LlmUsage",
    "Message",
    "Person",
    "PersonAccount",
    "PersonAlias",
    "PersonAliasVersion",
    "PersonChatName",
    "PersonFact",
    "PersonForgotten",
    "PersonLlmGap",
    "PersonTimelineEntry",
    "PreferenceDoc",
    "TopicCacheEntry",
]
