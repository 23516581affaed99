"""Filters every jargon candidate passes, whether an LLM proposed it or offline discovery found it.

- messages: the bot's own messages are never evidence (it would learn its own words back), nor are
  members' memory commands ("/what glorp" asks about a term, it is no use of it);
- message ids: an LLM answer may only cite messages of the window it was shown;
- terms: people's names and aliases, a name or a time word with only a pronoun, particle or
  greeting glued to it ("大伟你", "谢谢悦悦", "周六我"), a time word with only a light verb beside it
  ("改周日") or a time expression alone ("周四晚上"), a place name with only a station, road,
  street or number after it ("九溪公交站"),
  @mentions, URLs, pure numbers or punctuation, one repeated character ("哈哈哈哈"), too short or
  too long, stop words (a term made only of function words and everyday chat filler, such as
  "我也是" or "of the"), a leading particle ("的微博视频": a piece cut after the particle of the
  word before it), an English article at either end ("a skronk", "the pizza tax", "pays the": the
  term beside it, cut with its neighbour), and terms already known (`exclude`);
- batches: a run that proposes absurdly many candidates is dropped whole, since that means the
  extractor misfired (an LLM listing every word, or a pasted document), not that a group coined
  fifty words in twenty seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memory.commands import is_memory_command
from memory.jargon.types import Candidate, MinerMessage
from memory.persons.names import pos_tags
from memory.recall.timeexpr import parse_time_hints
from memory.text import normalize, words

# Function words and everyday chat filler (our own list). A candidate made only of these is dropped.
STOP_WORDS: frozenset[str] = frozenset(
    """
    的 了 着 过 是 在 有 和 与 或 就 都 也 还 又 再 才 很 太 更 最 不 没 没有
    别 要 会 能 可以 可能 想 让 把 被 给 我 你 他 她 它 我们 你们 他们 她们 咱们
    大家 自己 人家 谁 什么 怎么 怎样 怎么样 为什么 哪 哪里 哪儿 这 那 这个 那个 这些
    那些 这样 那样 这么 那么 这里 那里 一个 一下 一点 一些 一样 一起 一直 已经 现在
    今天 明天 昨天 时候 然后 但是 可是 所以 因为 如果 虽然 而且 还是 或者 就是 只是
    不是 真的 其实 好像 觉得 知道 看到 感觉 应该 一定 真是 好的 好吧 对的 对啊 是的
    是啊 嗯 嗯嗯 啊 呀 吧 呢 吗 嘛 哦 噢 哈 哈哈 嘿 喂 呃 额 哎 诶 唉 啦 哇 咯
    呗 么 之 个 们 来 去 说 看 做 用 好 对 多 少 大 小 上 下 里 中 前 后 时
    年 月 日 天 点 次 还有 以后 以前 之后 之前 不要 不会 不能 不用 需要 喜欢 谢谢
    晚安 早安 早上好 晚上好 你好 再见 拜拜 可爱 厉害 好看 ok okay yes no
    yeah lol the a an of to in on at for and or but
    is are was were be been it this that i you he
    she we they me my your his her our their what
    who how why when where not do does did so just
    like get got have has had can will would should
    could with from by as if then than too very
    """.split()
)

# Particles that attach to the word before them: a term never starts with one standing alone.
LEADING_PARTICLES: frozenset[str] = frozenset("的了着吗呢吧啊么嘛呀哦得地之")

# Greetings and thanks said to someone by name ("谢谢悦悦", "表姐好"); with pronouns and particles (jieba's
# tags r, u, y, e) they are what a name or a time word is glued to in chat, never part of a coined term.
GREETINGS: frozenset[str] = frozenset(
    "谢谢 多谢 感谢 你好 您好 早 早安 早上好 中午好 下午好 晚上好 晚安 再见 拜拜 辛苦 辛苦了 好".split()
)
_GLUE_TAG_FAMILIES = ("r", "u")
_GLUE_TAGS = frozenset({"y", "e"})
# jieba's tags of a person's name (nr: name, nrfg / nrt: foreign or transliterated), and the prefixes of
# a familiar form of address ("小吴", "老赵").
_NAME_TAGS = frozenset({"nr", "nrfg", "nrt"})
_ADDRESS_PREFIXES = frozenset("小老大阿")
# The last character of a word that says where in a place: a station, road, street, lane or number
# ("公交站", "西路", "号").
_PLACE_PART_ENDINGS = frozenset("站路街巷号")
# Any moment serves: only where a time expression lies in a term matters, not which day it means.
_SOME_NOW = datetime(2000, 1, 1, tzinfo=UTC)

# An English article standing as a word at either end of a term: "a skronk" is "skronk" with the word
# before it. Only a whole word ("A股" keeps its letter).
_EDGE_ARTICLE = re.compile(r"^(?:a|an|the)\s|\s(?:a|an|the)$")

# A bare domain is read from the start of its run of name characters (leading dots or dashes and
# all): tried from each word inside the run, each start read the run to its end, so "1.1.1.…" of
# 20,000 characters took seconds in the mining job.
_URL = re.compile(
    r"(?:https?://|www\.)\S+|(?<![\w.-])[.-]*+\w[\w.-]*\.(?:com|cn|net|org|io|me|cc)\b", re.IGNORECASE
)
_MENTION = re.compile(r"@\S+")
_NUMBER = re.compile(r"[\d\s.,:%+\-/]+")
_SPACE = re.compile(r"\s")
# A regex call holds the GIL throughout; masking a 550,000-character 接龙 in one call stalled the
# event loop for ~40 ms, so long texts are masked a piece at a time.
_MASK_PIECE = 8192


@dataclass(frozen=True, slots=True)
class FilterParams:
    """Tunable limits of the filters (lengths in code points of the normalised term)."""

    min_chars: int = 2
    max_chars: int = 20
    max_batch: int = 30
    stop_words: frozenset[str] = field(default=STOP_WORDS)


@dataclass(frozen=True, slots=True)
class FilterResult:
    """What survived, what was dropped and why (`batch_dropped`: the whole batch was refused)."""

    kept: list[Candidate]
    dropped: list[tuple[str, str]]
    batch_dropped: bool = False


def mask_mentions(text: str) -> str:
    """`text` with @mentions and URLs blanked out, so they are never mined as words."""
    return "".join(_MENTION.sub(" ", _URL.sub(" ", piece)) for piece in _pieces_after_spaces(text))


def _pieces_after_spaces(text: str) -> Iterable[str]:
    # Neither a mention nor a URL spans whitespace, so pieces that end just after a whitespace
    # character are masked exactly as the whole text would be.
    start = 0
    while len(text) - start > _MASK_PIECE:
        space = _SPACE.search(text, start + _MASK_PIECE)
        if space is None:
            break
        yield text[start : space.end()]
        start = space.end()
    yield text[start:]


def is_usable(message: MinerMessage) -> bool:
    """Whether a message may serve as statistics and evidence: neither the bot's own nor a memory
    command (`memory.commands`)."""
    return not message.is_bot and not is_memory_command(message.text)


def usable_messages(messages: Iterable[MinerMessage]) -> list[MinerMessage]:
    """The messages that may serve as statistics and evidence (`is_usable`)."""
    return [m for m in messages if is_usable(m)]


def is_junk(term: str) -> bool:
    """True for a URL, a mention, a number, punctuation only, or one character repeated."""
    text = normalize(term)
    if not text or _URL.search(text) or text.startswith("@"):
        return True
    if _NUMBER.fullmatch(text):
        return True
    if not any(char.isalnum() for char in text):
        return True
    return len(set(text.replace(" ", ""))) == 1 and len(text) > 1


def _normalized_set(items: Iterable[str]) -> set[str]:
    return {n for n in (normalize(item) for item in items) if n}


def is_stop_phrase(term: str, stop_words: Collection[str] = STOP_WORDS) -> bool:
    """True when every word of `term` (jieba's cut) is a stop word."""
    tokens = words(term)
    return bool(tokens) and all(token in stop_words for token in tokens)


def starts_with_particle(term: str) -> bool:
    """True when jieba's first word of `term` is a lone particle ("的微博视频", not "的确")."""
    tokens = words(term)
    return bool(tokens) and tokens[0] in LEADING_PARTICLES


def edged_by_article(term: str) -> bool:
    """True when normalised `term` starts or ends with an English article as a word of its own."""
    return _EDGE_ARTICLE.search(term) is not None


def _is_glue(word: str, tag: str) -> bool:
    return word in GREETINGS or tag in _GLUE_TAGS or tag.startswith(_GLUE_TAG_FAMILIES)


def _is_time(text: str) -> bool:
    """Whether `text` is a time expression: the time parser reads all of it, or it reads a part and
    jieba tags every word a time word ("周四晚上"; not "早八", a time word the parser knows nothing of)."""
    hints = parse_time_hints(text, _SOME_NOW)
    if any(h.span == (0, len(text)) for h in hints):
        return True
    return bool(hints) and all(tag == "t" for _, tag in pos_tags(text))


def is_time_word(word: str, tag: str) -> bool:
    """Whether one of jieba's words (with its tag) says when: tagged a time word ("下次", "周日") or
    read whole by the time parser."""
    return tag == "t" or _is_time(word)


def _is_light_verb(word: str, tag: str) -> bool:
    return len(word) == 1 and tag.startswith("v")


def _is_name_like(text: str, names: Collection[str]) -> bool:
    """Whether `text` is how members are called: a known name, a part of one ("悦悦" of "悦悦子"), or
    words jieba reads as a person's name, after a familiar prefix ("大伟", "小吴")."""
    if len(text) >= 2 and any(text in name for name in names):
        return True
    tagged = pos_tags(text)
    if len(tagged) > 1 and tagged[0][0] in _ADDRESS_PREFIXES:
        tagged = tagged[1:]
    return all(tag in _NAME_TAGS for _, tag in tagged)


def _trimmed(
    tagged: Sequence[tuple[str, str]], edge: Callable[[str, str], bool]
) -> Sequence[tuple[str, str]]:
    """`tagged` without the words at either end for which `edge(word, tag)` holds."""
    start, end = 0, len(tagged)
    while start < end and edge(*tagged[start]):
        start += 1
    while end > start and edge(*tagged[end - 1]):
        end -= 1
    return tagged[start:end]


def _joined(tagged: Sequence[tuple[str, str]]) -> str:
    return "".join(word for word, _ in tagged)


def is_address_or_time(term: str, names: Collection[str] = ()) -> bool:
    """True when normalised `term` is a time expression, or a name or time word with only pronouns,
    particles or greetings around it: "周四晚上", "周六我", "大伟你", "谢谢悦悦" (how a message
    addresses someone or says when, not a word of the group's); or a time word with only a light verb
    (one character) beside it: "改周日", "改明天", "周日见" (when something happens, said with its
    verb). `names` must be normalised."""
    tagged = pos_tags(term)
    core = _trimmed(tagged, _is_glue)
    if not core:
        return False
    if _is_time(_joined(core)) or (len(core) != len(tagged) and _is_name_like(_joined(core), names)):
        return True
    timed = _trimmed(core, _is_light_verb)
    return bool(timed) and len(timed) != len(core) and all(is_time_word(*pair) for pair in timed)


def is_place(term: str) -> bool:
    """True when normalised `term` is a place name jieba knows (tag ns) followed only by where in it: a
    station, road, street, lane or number ("九溪公交站", "南京西路"; an address, not a word of the
    group's, though its rarity makes it look like one). A term a place name begins in other ways
    ("亚洲蹲", "巴黎孝子") stays."""
    tagged = pos_tags(term)
    if len(tagged) < 2 or not tagged[0][1].startswith("ns") or tagged[-1][0][-1] not in _PLACE_PART_ENDINGS:
        return False
    return all(tag.startswith(("ns", "m")) or word[-1] in _PLACE_PART_ENDINGS for word, tag in tagged[1:])


def reject_reason(
    term: str,
    params: FilterParams,
    names: Collection[str] = (),
    exclude: Collection[str] = (),
) -> str | None:
    """Why `term` must not become a candidate, or None. `names` and `exclude` must be normalised."""
    text = normalize(term)
    if not params.min_chars <= len(text) <= params.max_chars:
        return "length"
    if is_junk(text):
        return "junk"
    if text in exclude:
        return "known"
    if text in names or any(len(name) >= 2 and name in text for name in names):
        return "name"
    if is_address_or_time(text, names):
        return "address_or_time"
    if is_place(text):
        return "place"
    if text in params.stop_words or is_stop_phrase(text, params.stop_words):
        return "stop_word"
    if starts_with_particle(text):
        return "particle"
    if edged_by_article(text):
        return "article"
    return None


def filter_candidates(
    candidates: Sequence[Candidate],
    window: Sequence[MinerMessage],
    params: FilterParams,
    names: Iterable[str] = (),
    exclude: Iterable[str] = (),
    best: int | None = None,
) -> FilterResult:
    """Apply every filter to one run's candidates (LLM answers or offline discovery alike).

    Evidence keys that are not messages of `window`, or that are the bot's own messages, are removed;
    a candidate left without evidence is dropped ("unknown_message"). Candidates with the same
    normalised content are merged. With `best`, the extractor proposes only the `best` survivors of
    highest score (best first; the others are dropped as "rank"). If more than `params.max_batch` are
    proposed, the batch is dropped.
    """
    valid_keys = {m.key for m in usable_messages(window)}
    name_set = _normalized_set(names)
    exclude_set = _normalized_set(exclude)
    kept: dict[str, Candidate] = {}
    dropped: list[tuple[str, str]] = []
    for cand in candidates:
        keys = tuple(dict.fromkeys(k for k in cand.message_keys if k in valid_keys))
        if not keys:
            dropped.append((cand.content, "unknown_message"))
            continue
        reason = reject_reason(cand.content, params, name_set, exclude_set)
        if reason:
            dropped.append((cand.content, reason))
            continue
        norm = normalize(cand.content)
        if norm in kept:
            prev = kept[norm]
            merged = tuple(dict.fromkeys(prev.message_keys + keys))
            kept[norm] = Candidate(prev.content, merged, max(prev.score, cand.score))
        else:
            kept[norm] = Candidate(cand.content, keys, cand.score)
    proposed = list(kept.values())
    if best is not None:
        ranked = sorted(proposed, key=lambda c: (-c.score, c.content))
        proposed = ranked[:best]
        dropped += [(c.content, "rank") for c in ranked[best:]]
    if len(proposed) > params.max_batch:
        return FilterResult([], dropped + [(c.content, "batch") for c in proposed], True)
    return FilterResult(proposed, dropped)
