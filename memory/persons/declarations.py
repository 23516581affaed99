"""Names declared in chat: "叫我X" / "call me X" (self-declared) and "以后就叫你X吧" / "we call him X"
(given by others to the person addressed, @-mentioned or replied to).

Conservative by design: a candidate name must look like a name (no verbs, pronouns, time words or
numbers by jieba's tags; not a stop word), sit at the end of its clause, come from the speaker's own
words (`speech.own_clauses`), and not be refused ("别叫我X", "don't call me X"); a bare "叫X" counts
after such a refusal in the same message ("别叫我伟哥😂 叫大伟"). "我是X" and "I'm X" are accepted only
in an introduction or when X reads as a name by itself (`_reads_as_a_name`), with lower confidence, and
never when X is a relation or role ("我是悦悦表姐", "我是产品经理").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from memory.persons.english import KNOWN_ZIPF, is_common_english, nickname_relatives
from memory.persons.names import clean_name, grapheme_len, has_cjk, pos_tags, split_pinyin
from memory.persons.speech import Clause, Utterance, own_clauses, own_text, sub_clauses

MAX_ALIAS_GRAPHEMES = 16

_NAME_ZH = r"(?P<a>[^\s，。！？,.!?、~～:：;；\"“”'「」]{1,12}?)"
_NAME_EN = r"(?P<a>[A-Za-z][\w'.-]{0,23}(?:\s[A-Z][\w'-]{0,23})?)"
_TAIL_ZH = r"(?:吧|就好|就行|就可以|就成|好了|哦|噢|啦|呀|啊|哈|嘛)*\s*$"
_TAIL_EN = r"(?:\s+(?:please|instead|from\s+now\s+on|for\s+short|here|then))*\s*[\W_]*$"
_INTRO = re.compile(
    r"大家好|各位好|你们好|自我介绍|初来乍到|新人|请多关照|多多指教|"
    r"(?i:\b(?:hi|hello|hey|new\s+here|nice\s+to\s+meet)\b)"
)

_SELF_ZH = [
    (re.compile(r"(?:你们|大家|以后)?(?:可以|就|都)?(?:叫|喊|称呼)我(?:为)?" + _NAME_ZH + _TAIL_ZH), 0.95),
    (re.compile(r"(?:大家|朋友们?|别人|他们)都?(?:叫|喊)我" + _NAME_ZH + _TAIL_ZH), 0.9),
    (re.compile(r"我的?(?:名字|昵称|网名|外号|小名)(?:是|叫)" + _NAME_ZH + _TAIL_ZH), 0.9),
    (re.compile(r"^(?:我|本人)叫" + _NAME_ZH + _TAIL_ZH), 0.8),
]
# A refused name ("别叫我伟哥") and, after it in the same message, the one asked for instead with a
# bare "叫X" ("别叫我伟哥😂 叫大伟", "不要喊我胖子，叫我阿飞就好"): the refusal says the naming is the
# speaker's own ("别叫我起床，叫外卖吧" refuses no name). Without a refusal, "叫X就行" may as well send
# for someone ("叫老王就行") or order something ("叫外卖就行").
_REFUSAL_ZH = re.compile(
    r"(?:别|不要|不准|不许|甭|莫)再?(?:叫|喊|称呼)我(?P<a>[^\s，,。！？!?、;；]{1,12})(?P<rest>.*)$"
)
_ASKED_INSTEAD_ZH = re.compile(r"^[\W_]*(?:就|还是|请|要)?(?:叫|喊|称呼)我?(?:为)?" + _NAME_ZH + _TAIL_ZH)
_SELF_IS_ZH = re.compile(r"^(?:我|本人)是" + _NAME_ZH + _TAIL_ZH)
_SELF_EN = [
    (re.compile(r"(?i:\bcall\s+me\s+)" + _NAME_EN + _TAIL_EN), 0.95),
    (re.compile(r"(?i:\bmy\s+name(?:'s|\s+is)\s+)" + _NAME_EN + _TAIL_EN), 0.9),
    (re.compile(r"(?i:\bI\s+go\s+by\s+)" + _NAME_EN + _TAIL_EN), 0.9),
]
_SELF_IS_EN = re.compile(
    r"(?:^|[\s,])(?:I'm|I\s+am|Im)\s+(?P<a>[A-Z][a-z]{1,20}(?:\s+[A-Z][a-z]{1,20})?)" + _TAIL_EN
)

_OTHER_ADDRESSEE_ZH = re.compile(
    r"(?:以后|今后|从今天起|从现在起|从此)?(?:就|我们|大家|我)?(?:都|就)?(?:叫|喊)你" + _NAME_ZH + _TAIL_ZH
)
_OTHER_THIRD_ZH = re.compile(
    r"(?:我们|大家|我|群里)(?:都|一般)?(?:叫|喊|管)(?:他|她|ta|TA)(?:叫)?" + _NAME_ZH + _TAIL_ZH
)
_OTHER_ADDRESSEE_EN = re.compile(
    r"(?i:\b(?:I'll|I\s+will|let's|we'll|we\s+will|gonna|I'm\s+gonna)\s+call\s+you\s+)" + _NAME_EN + _TAIL_EN
)
_OTHER_THIRD_EN = re.compile(
    r"(?i:\b(?:we|everyone|everybody|people|they|I)\s+(?:all\s+)?(?:call|calls)\s+(?:him|her|them)\s+)"
    + _NAME_EN
    + _TAIL_EN
)

# Each pattern above matches only a clause holding one of these words, and a clause is a piece of the
# speaker's own text (`speech.own_text`). Keep it in step with the patterns.
_NEEDED = re.compile(
    r"叫|喊|称呼|名字|昵称|网名|外号|小名|我是|本人是|管|(?i:call|name|go\s+by)|I'm|I\s+am|Im"
)

_REJECT_TAGS = ("v", "r", "d", "p", "u", "y", "c", "m", "q", "t", "f", "e", "o")
_STOP_ZH = frozenset("什么 干嘛 干啥 啥 谁 一声 起来 出来 过来 回来 一下 哥哥 姐姐 爸爸 妈妈".split())
_STOP_EN = frozenset(
    """a an the me you him her it them us later back tomorrow tonight now maybe anytime anything
    when if sometime soon crazy old fine ok okay good great sure sorry here there back home done tired
    happy sad busy free ready new glad afraid not so very just also still going gonna""".split()
)
# Words for what someone is to others, not what they are called: kinship, ties and roles. "我是X" with
# one of these as X's head word ("我是悦悦表姐", "大家好，我是产品经理", "我是新人") tells a relation or
# a role. Two characters or more, so the one-character honorifics of a nickname (红姐, 杰哥) still count.
_RELATION_HEADS = frozenset(
    """爸爸 妈妈 爸妈 父亲 母亲 哥哥 姐姐 弟弟 妹妹 表哥 表姐 表弟 表妹 堂哥 堂姐 堂弟 堂妹 老公 老婆 媳妇
    丈夫 妻子 男朋友 女朋友 男友 女友 对象 儿子 女儿 爷爷 奶奶 外公 外婆 姥姥 姥爷 叔叔 阿姨 舅舅 舅妈 姑姑
    姨妈 伯伯 侄子 侄女 外甥 外甥女 嫂子 姐夫 妹夫 亲戚 家长 闺蜜 朋友 好友 同事 同学 室友 舍友 邻居 师兄
    师姐 师弟 师妹 学长 学姐 学弟 学妹 前辈 后辈 导师 学生 领导 老板 上司 下属 助理 经理 主管 总监 实习生
    新人 新生 群主 管理员 程序员 设计师 工程师 产品 运营 客服 粉丝""".split()
)
_TRAILING_PARTICLES = re.compile(r"[吧呀啊哦噢啦嘛哈~～!！]+$")
# A refusal before the naming verb ("别叫我小红", "不要再喊我胖子", "讨厌别人叫我X", "don't call me
# Bob", "never call me Bob"): the name is one the speaker does not want.
_NEGATED_ZH = re.compile(
    r"(?:(?<![特区级分告识离差类性])别(?![人的处])|不要|不准|不许|不用|不必|甭|勿|莫|不能|不可以|不想|不喜欢|讨厌|不让|不(?:再)?[叫喊称])"
    r"[^，,。！？!?]{0,6}$"
)
_NEGATED_EN = re.compile(
    r"(?i:\b(?:don['’]?t|do\s+not|never|stop|no\s+one|nobody|won['’]?t|shouldn['’]?t|can['’]?t)\b)"
    r"(?:\s+\w+){0,3}\s*$"
)


class Target(StrEnum):
    """Who a declared name belongs to."""

    SELF = "self"
    MENTIONED = "mentioned"
    REPLIED = "replied"


@dataclass(frozen=True, slots=True)
class Declaration:
    """A name declared for `person_id` in message `message_key` (span = offsets in the message text)."""

    person_id: str
    alias: str
    target: Target
    message_key: str
    confidence: float
    span: tuple[int, int]


def looks_like_name(alias: str) -> bool:
    """A conservative check that `alias` can be what someone is called."""
    if not alias or grapheme_len(alias) > MAX_ALIAS_GRAPHEMES:
        return False
    if has_cjk(alias):
        if alias in _STOP_ZH or alias.endswith(("了", "的", "过", "着", "去", "来")):
            return False
        tags = [(w, f) for w, f in pos_tags(alias) if w.strip()]
        if not tags or any(flag != "eng" and flag.startswith(_REJECT_TAGS) for _, flag in tags):
            return False
        return True
    first = alias.split()[0].lower()
    return first not in _STOP_EN and any(ch.isalpha() for ch in alias)


def _reads_as_a_name(alias: str, language: str) -> bool:
    """Whether X of "我是X" / "I'm X" is a name without a greeting to say so: one word jieba tags a
    person name (张三, not 学生); in English, a capitalised word (the pattern asks for it, ending its
    clause, so "I'm John's friend" is no naming) that English does not use as a word ("Pri", "Priya";
    not "Tired", "Chinese", "Hungry", `english.KNOWN_ZIPF`)."""
    if language == "en":
        return " " not in alias and not is_common_english(alias, KNOWN_ZIPF)
    tags = pos_tags(alias)
    return len(tags) == 1 and tags[0][1].startswith("nr")


def _introduced_name(alias: str, language: str) -> bool:
    """Whether X of "我是X" / "I'm X" after a greeting names the speaker. Chinese X: any that looks like
    a name (relations and roles are left out before). English X, one word: a given name as in
    `_full_name` (one the nickname table knows, or no word English uses), or a name in pinyin that is no
    everyday English word ("hi I'm Will", "hi I'm Priya", "hi I'm Ming"; not "hi I'm Hungry", "hey I'm
    Bored": the greeting says nothing of the word after it)."""
    if language != "en":
        return True
    pinyin = split_pinyin(alias.lower()) is not None and not is_common_english(alias)
    return _given_name(alias) or pinyin


def _full_name(alias: str) -> bool:
    """Whether the two capitalised words of "I'm X Y" are a given name and a second name, not words
    in Title Case ("I'm Really Tired", "I'm Going Home"): X a given name the nickname table knows or
    no word English uses (`KNOWN_ZIPF`), Y one too or a word of no everyday English (a family name:
    "Sam Lee", "Mary Jane", "Priya Sharma"; not "Sam Brown", a colour as much as a name)."""
    given, second = alias.split()
    return _given_name(given) and (_given_name(second) or not is_common_english(second))


def _given_name(word: str) -> bool:
    return bool(nickname_relatives(word.lower())) or not is_common_english(word, KNOWN_ZIPF)


def _tells_a_relation(alias: str) -> bool:
    """Whether X of "我是X" says what the speaker is to someone or does rather than what they are
    called: its last word is a kinship, tie or role word ("悦悦表姐", "产品经理", "新人")."""
    tags = [word for word, _ in pos_tags(alias) if word.strip()]
    return bool(tags) and tags[-1] in _RELATION_HEADS


def _candidate(match: re.Match[str], clause: Clause) -> tuple[str, tuple[int, int]] | None:
    raw = _TRAILING_PARTICLES.sub("", match.group("a")).strip()
    alias = clean_name(raw)
    if not looks_like_name(alias):
        return None
    start = clause.start + match.start("a")
    return alias, (start, start + len(raw))


def addressee(utterance: Utterance) -> tuple[str, Target] | None:
    """The one person a remark is addressed to: a single @-mention, else the replied-to sender."""
    mentioned = [m for m in dict.fromkeys(utterance.mentioned_ids) if m != utterance.speaker_id]
    if len(mentioned) == 1:
        return mentioned[0], Target.MENTIONED
    if not mentioned and utterance.reply_to_id and utterance.reply_to_id != utterance.speaker_id:
        return utterance.reply_to_id, Target.REPLIED
    return None


def could_declare(text: str) -> bool:
    """False only when `extract_declarations` finds nothing in an utterance of `text`, whoever speaks
    and whoever is addressed: no clause of its own words holds a word every pattern needs. No jieba."""
    return _NEEDED.search(own_text(text)) is not None


def extract_declarations(utterance: Utterance) -> list[Declaration]:
    """Names declared in one message: for the speaker ("叫我小红", "call me Bob", "大家好，我是阿飞")
    and for the one person addressed ("@alice 以后就叫你小A吧", "we call him Bob" in a reply)."""
    found: dict[tuple[str, str], Declaration] = {}
    intro = _INTRO.search(utterance.text) is not None

    def add(person_id: str, target: Target, got: tuple[str, tuple[int, int]] | None, conf: float) -> None:
        if got is None:
            return
        alias, span = got
        key = (person_id, alias.casefold())
        if key not in found or found[key].confidence < conf:
            found[key] = Declaration(person_id, alias, target, utterance.key, conf, span)

    addressed_to = addressee(utterance)
    refused = False
    for clause in (part for whole in own_clauses(utterance) for part in sub_clauses(whole)):
        if clause.question:
            continue
        body = clause.text
        if (refusal := _REFUSAL_ZH.search(body)) and _candidate(refusal, clause):
            refused = True
            rest = Clause(refusal["rest"], clause.start + refusal.start("rest"), False)
            if asked := _ASKED_INSTEAD_ZH.match(rest.text):
                add(utterance.speaker_id, Target.SELF, _candidate(asked, rest), 0.9)
        elif refused and (asked := _ASKED_INSTEAD_ZH.match(body)):
            add(utterance.speaker_id, Target.SELF, _candidate(asked, clause), 0.9)
        for pattern, conf in (*_SELF_ZH, *_SELF_EN):
            for match in pattern.finditer(body):
                if not _negated(body, match):
                    add(utterance.speaker_id, Target.SELF, _candidate(match, clause), conf)
        for pattern, language in ((_SELF_IS_ZH, "zh"), (_SELF_IS_EN, "en")):
            for match in pattern.finditer(body):
                got = _candidate(match, clause)
                if got is None or (language == "zh" and _tells_a_relation(got[0])):
                    continue
                if " " in got[0]:  # "I'm Mary Jane", greeting or not, only when each word is a name
                    if _full_name(got[0]):
                        add(utterance.speaker_id, Target.SELF, got, 0.6)
                elif _reads_as_a_name(got[0], language) or (intro and _introduced_name(got[0], language)):
                    add(utterance.speaker_id, Target.SELF, got, 0.6)
        if addressed_to is None:
            continue
        for pattern in (_OTHER_ADDRESSEE_ZH, _OTHER_THIRD_ZH, _OTHER_ADDRESSEE_EN, _OTHER_THIRD_EN):
            for match in pattern.finditer(body):
                if pattern is _OTHER_ADDRESSEE_ZH and _preceded_by_self_word(body, match.start()):
                    continue
                if _negated(body, match):
                    continue
                add(addressed_to[0], addressed_to[1], _candidate(match, clause), 0.85)
    return sorted(found.values(), key=lambda d: d.span)


def _preceded_by_self_word(body: str, start: int) -> bool:
    # "谁叫你…" / "叫你别…" are not namings; "谁" directly before 叫你 is a question or complaint.
    return body[max(0, start - 1) : start] == "谁"


def _negated(body: str, match: re.Match[str]) -> bool:
    """True when the naming is refused ("别叫我小红", "don't call me Bob"), judged on the clause up to
    the name."""
    before = body[: match.start("a")]
    return _NEGATED_ZH.search(before) is not None or _NEGATED_EN.search(before) is not None
