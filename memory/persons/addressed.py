"""Names others call someone by when talking to them: "@大伟 大伟你明天来吗", a reply "大伟，收到",
"thanks Dave" answering Dave's message. Learnt as an alias of the person addressed (source "others")
once the evidence holds, never from one message.

A name counts only in a message addressed to one person (a single @-mention of someone else, else a
reply to someone else's message; `declarations.addressee`), at the start of one of the speaker's own
sentences: a Chinese name of 2-4 characters before 你 or a comma ("大伟你…", "大伟，…"), or a Latin
one after a greeting or thanks ("thanks Dave", "hey Priya,") or, when it is no everyday English word,
before a comma ("Dave, can you…"). It must read as a name (`declarations.looks_like_name`; a Chinese
one as `_zh_name` says, not "谢谢，…", "兄弟你…", "好吧，…"; a Latin one written as a name, not "Sure, …";
no word people call anyone, "大佬", "bro") and be no name of anyone
in the chat yet, the addressee included (`AliasIndex.resolve`: also no variant of another member's,
大卫 for 大伟): a name someone else goes by is never learnt for the addressee.

Each sighting is kept in the chat's `job_state` row of job `JOB` (a bounded handful per name). A name
becomes the addressee's alias when it was said to them in at least `MIN_MESSAGES` messages and to no
one else as often: a name said once to the wrong person teaches nothing, and the sightings of a name
said to two people as often wait for more. Sightings from before a request to be forgotten, of the
speaker or of the addressee, are left out. The sightings follow a person merge (`move_sightings`: the
survivor's) and a chat merge (`folded_sightings`: both chats').
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import JobState, Person
from memory.offload import text_work
from memory.persons import store, timeline_text
from memory.persons.aliases import COMMON_WORD_FREQ, AliasIndex
from memory.persons.declarations import addressee, looks_like_name
from memory.persons.english import is_common_english, written_as_a_name
from memory.persons.forgotten import Forgotten, all_forgotten
from memory.persons.names import name_key, pos_tags
from memory.persons.speech import Utterance, own_clauses
from memory.text import dictionary_frequency

JOB = "person_address_names"
MIN_MESSAGES = 2
WEIGHT = 0.8
MAX_NAMES = 200  # names with sightings kept per chat, the most recently seen
MAX_SIGHTINGS = 8  # per name
_SOME_TIME = datetime(2000, 1, 1, tzinfo=UTC)  # the pre-filter reads words only

_LEADING_MENTIONS = re.compile(r"^(?:@\S+\s*)+")
_ZH = re.compile(r"(?P<a>(?:(?![你我他她它])[\u4e00-\u9fff]){2,4})(?:你|[，,])")
_EN_GREETING = re.compile(
    r"(?i:(?:thanks|thank\s+you|thx|ty|hey|hi|hello|yo|sorry|congrats|cheers|morning|night|welcome)"
    r"(?:\s+so\s+much)?,?\s+)(?P<a>[A-Z][a-z]{1,20})(?=\s*[,!.?~]|\s*$)"
)
_EN_CALLED = re.compile(r"(?P<a>[A-Z][a-z]{1,20}),\s")
# After 小/老/阿, a character that makes a kinship, a role or a pet name, no one's name.
_NO_NAME_AFTER_PREFIX = frozenset("哥姐弟妹爸妈叔姨伯舅公婆宝贝爷奶师板总大铁乡兄表可乖")
# What people call anyone: no one's name.
_ANYONE = frozenset(
    """兄弟 哥们 老哥 老铁 大佬 大哥 大姐 美女 帅哥 亲爱的 宝贝 老板 同学 朋友 师傅 老师 先生 女士 小伙伴
    各位 大家 群友 楼主 老弟 老妹 姐妹 兄弟们 姐妹们 亲 宝 哥 姐 宝子 宝宝 宝贝 小姐姐 小哥哥 小可爱 家人们
    all everyone everybody guys man bro dude mate buddy boss sir madam folks team fam babe dear love
    honey bud pal chief""".split()
)


@dataclass(frozen=True, slots=True)
class Addressed:
    """`alias` said to `person_id` in the message (span = offsets in the message text)."""

    person_id: str
    alias: str
    span: tuple[int, int]


def could_address(text: str) -> bool:
    """False when a message of `text` calls no one by a name, whoever it is addressed to: what
    `addressed_names` reads, without the look-up of whom (no query)."""
    return bool(_called(Utterance("-", "-", text, _SOME_TIME)))


def addressed_names(utterance: Utterance) -> list[Addressed]:
    """The names the speaker calls the one person they address, at the start of their own sentences."""
    target = addressee(utterance)
    if target is None:
        return []
    return [Addressed(target[0], alias, span) for alias, span in _called(utterance)]


def _called(utterance: Utterance) -> list[tuple[str, tuple[int, int]]]:
    """The names the speaker's own sentences start by calling someone, once each, with their spans."""
    found: dict[str, tuple[str, tuple[int, int]]] = {}
    for clause in own_clauses(utterance):
        lead = _LEADING_MENTIONS.match(clause.text)
        skip = lead.end() if lead else 0
        body = clause.text[skip:]
        for match, language in _candidates(body):
            alias = match["a"]
            if _reads_as_a_name(alias, body, match.start("a"), language):
                start = clause.start + skip + match.start("a")
                found.setdefault(name_key(alias), (alias, (start, start + len(alias))))
    return list(found.values())


def _candidates(body: str) -> list[tuple[re.Match[str], str]]:
    """Where a sentence may start by calling someone: its first words only."""
    found = [(m, "zh") for m in [_ZH.match(body)] if m]
    found += [(m, "en") for m in [_EN_GREETING.match(body), _EN_CALLED.match(body)] if m]
    return found


def _reads_as_a_name(alias: str, body: str, at: int, language: str) -> bool:
    if alias.casefold() in _ANYONE or not looks_like_name(alias):
        return False
    if language == "zh":
        return _zh_name(alias)
    if at == 0:  # a sentence's first word: only one English never writes small ("Dave, …")
        return not is_common_english(alias.lower())
    # After a greeting opening the sentence ("Thanks Mark!"), whose capital says nothing.
    return written_as_a_name(body[:1].lower() + body[1:], at, alias.lower())


def _zh_name(alias: str) -> bool:
    """A Chinese name as people call one another: 小/老/阿 and one character of a name (老王, 阿飞; not
    老哥, 小宝, 老板), or one word jieba tags a person's name and its dictionary does not use often
    (大伟, 张伟; not 谢谢, 明白, 老公, which it also tags so). Conservative: 思思 or 大壮 are left out."""
    if len(alias) == 2 and alias[0] in "小老阿":
        return alias[1] not in _NO_NAME_AFTER_PREFIX
    tags = [flag for word, flag in pos_tags(alias) if word.strip()]
    return len(tags) == 1 and tags[0].startswith("nr") and dictionary_frequency(alias) < COMMON_WORD_FREQ


async def note_addressed_names(
    session: AsyncSession, chat_id: int, utterance: Utterance, said_in: int, sources: tuple[str, ...]
) -> list[tuple[int, str]]:
    """Keep (in the caller's transaction) the names `utterance` calls its addressee by, and learn each
    whose evidence now holds as their alias in the chat (source "others", with a timeline line).
    `said_in` is the message counted (an edit's first version: one message with it); `sources` the
    alias sources in use. Returns the (person id, alias) learnt; the caller bumps the chat's alias
    version when any is."""
    said = await text_work(len(utterance.text), addressed_names, utterance)
    if not said:
        return []
    index = AliasIndex(await store.alias_entries(session, chat_id, sources))
    new = [a for a in said if not index.resolve(a.alias).matches]
    if not new:
        return []
    state = await session.get(JobState, (JOB, chat_id))
    when = utterance.time.timestamp()
    if state is None:
        state = JobState(job=JOB, chat_id=chat_id, cursor=0, last_run=when, data={})
        session.add(state)
    names: dict[str, list[list[Any]]] = dict((state.data or {}).get("names", {}))
    learnt: list[tuple[int, str]] = []
    forgotten = await all_forgotten(session)
    for addressed in new:
        key = name_key(addressed.alias)
        sighting = [int(addressed.person_id), int(utterance.speaker_id), said_in, when, addressed.alias]
        seen = [*names.get(key, []), sighting][-MAX_SIGHTINGS:]
        seen = await _still_readable(session, seen, forgotten)
        person_id = _holder(seen)
        if person_id is None:
            names[key] = seen
            continue
        names.pop(key, None)
        await store.add_alias(
            session,
            person_id,
            chat_id,
            addressed.alias,
            "others",
            time=when,
            weight=WEIGHT,
            message_id=int(utterance.key),
        )
        await store.add_timeline(
            session,
            person_id,
            chat_id,
            when,
            timeline_text.declared("others", addressed.alias),
            sorted({int(s[2]) for s in seen if s[0] == person_id}),
            kind="alias",
        )
        learnt.append((person_id, addressed.alias))
    kept = sorted(names.items(), key=lambda item: max(s[3] for s in item[1]))[-MAX_NAMES:]
    state.data = {"names": dict(kept)}  # a new dict: JSON is saved when replaced
    state.last_run = max(state.last_run, when)
    return learnt


def folded_sightings(*datas: dict[str, Any] | None) -> dict[str, Any]:
    """The `job_state` data of chats merged into one: every chat's sightings of each name."""
    names: dict[str, list[list[Any]]] = {}
    for data in datas:
        for key, seen in (data or {}).get("names", {}).items():
            names[key] = sorted([*names.get(key, []), *seen], key=lambda s: s[3])[-MAX_SIGHTINGS:]
    return {"names": names}


async def move_sightings(session: AsyncSession, survivor_id: int, merged_id: int) -> None:
    """Count what was said to or by the merged person, in every chat, as said to or by the survivor
    (in the caller's transaction)."""
    for state in (await session.scalars(select(JobState).where(JobState.job == JOB))).all():
        names = (state.data or {}).get("names", {})
        moved = {
            key: [
                [survivor_id if p == merged_id else p, survivor_id if sp == merged_id else sp, *rest]
                for p, sp, *rest in seen
            ]
            for key, seen in names.items()
        }
        if moved != names:
            state.data = {"names": moved}


def _holder(seen: list[list[Any]]) -> int | None:
    """The person the name was said to in at least `MIN_MESSAGES` messages, and more often than to
    anyone else; None while no one is."""
    messages = Counter(person for person, _, _ in {(s[0], s[1], s[2]) for s in seen})
    if not messages:
        return None
    (first, count), *rest = messages.most_common()
    if count < MIN_MESSAGES or (rest and rest[0][1] == count):
        return None
    return int(first)


async def _still_readable(
    session: AsyncSession, seen: list[list[Any]], forgotten: Mapping[int, Forgotten]
) -> list[list[Any]]:
    """The sightings of people still here, none from before a request to be forgotten of the speaker
    or the addressee."""
    kept = []
    for sighting in seen:
        person, speaker, message, time = (
            int(sighting[0]),
            int(sighting[1]),
            int(sighting[2]),
            float(sighting[3]),
        )
        if await session.get(Person, person) is None:
            continue
        if any(
            f is not None and f.covers(message, time) for f in (forgotten.get(person), forgotten.get(speaker))
        ):
            continue
        kept.append(sighting)
    return kept
