"""People memory, pure part: names and aliases, declared names, self-stated facts, pronouns, cards.

No storage here: callers pass plain values in and get results out (the DB layer stores them).
"""

from memory.persons.aliases import AliasEntry, AliasIndex, How, Match, Mention, Resolution
from memory.persons.card import PersonView, TimelineEntry, render_card
from memory.persons.declarations import Declaration, Target, extract_declarations
from memory.persons.facts import (
    Fact,
    MergeResult,
    Retraction,
    attributes_of,
    extract_facts,
    extract_statements,
    merge_facts,
)
from memory.persons.naming import choose_person_name, vet_suggested_name
from memory.persons.pronouns import Gender, PronounRef, RecentPerson, resolve_pronoun, resolve_pronouns
from memory.persons.speech import Utterance, own_text

__all__ = [
    "AliasEntry",
    "AliasIndex",
    "Declaration",
    "Fact",
    "Gender",
    "How",
    "Match",
    "Mention",
    "MergeResult",
    "PersonView",
    "PronounRef",
    "RecentPerson",
    "Resolution",
    "Retraction",
    "Target",
    "TimelineEntry",
    "Utterance",
    "attributes_of",
    "choose_person_name",
    "extract_declarations",
    "extract_facts",
    "extract_statements",
    "merge_facts",
    "own_text",
    "render_card",
    "resolve_pronoun",
    "resolve_pronouns",
    "vet_suggested_name",
]
