import pytest

from memory.persons.declarations import Target, could_declare, extract_declarations
from memory.persons.observe import _MAY_DECLARE


def aliases(decls):
    return [(d.person_id, d.alias, d.target) for d in decls]


@pytest.mark.parametrize(
    ("text", "alias"),
    [
        ("叫我小红吧", "小红"),
        ("你们可以叫我老王就好", "老王"),
        ("大家都叫我红红", "红红"),
        ("我叫李明", "李明"),
        ("大家好，我是阿飞，请多关照", "阿飞"),
        ("you can call me Bob.", "Bob"),
        ("my name is Zhang Wei", "Zhang Wei"),
        ("Hi, I'm Alice!", "Alice"),
        ("my name’s Bob", "Bob"),
        ("Hi, I’m Alice!", "Alice"),
    ],
)
def test_self_declared_names(say, text, alias):
    utterance = say(text)
    (decl,) = extract_declarations(utterance)
    assert (decl.person_id, decl.alias, decl.target) == ("me", alias, Target.SELF)
    assert decl.message_key == utterance.key
    assert text[decl.span[0] : decl.span[1]] == alias


@pytest.mark.parametrize(
    "text",
    [
        "叫我起床",
        "叫我干嘛",
        "我是学生",
        "我是新来的",
        "我叫外卖了",
        "叫我小红？",
        "call me later",
        "I'm Tired",
        "I'm happy",
        "他说“叫我小红吧”",
        "> 叫我小红",
    ],
)
def test_non_declarations_are_ignored(say, text):
    assert extract_declarations(say(text)) == []


@pytest.mark.parametrize(
    ("text", "alias"),
    [
        ("btw I'm Pri", "Pri"),
        ("btw I’m Pri, new here, I do the copywriting", "Pri"),
        ("I am Priya", "Priya"),
        ("ok so I'm Oyelaran here", "Oyelaran"),
        ("sorry, Im Xiaoling.", "Xiaoling"),
    ],
)
def test_an_english_self_introduction_without_a_greeting_declares_a_name(say, text: str, alias: str):
    """Found by a QA pass of an English group: "btw I'm Pri" taught nothing, "I'm X" counting only right
    after a greeting ("hi, I'm Pri"), so /who Pri did not find Priya."""
    assert aliases(extract_declarations(say(text))) == [("me", alias, Target.SELF)]


@pytest.mark.parametrize(
    "text",
    [
        "I'm tired",
        "I'm back",
        "I'm here",
        "I'm sorry",
        "I'm fine",
        "I'm done",
        "I'm hungry",
        "I'm Chinese",
        "I'm American",
        "I'm 22",
        "I'm not sure",
        "I'm going",
        "I'm Happy",  # a capitalised adjective: everyday English, by wordfreq
        "I'm Hungry",
        "I'm Bored!",
        "I'm Vegan btw",
        "I'm John's friend",  # the word goes on into a predicate
        "I'm Priya's sister",
        "I'm Pri and I do the copy",
        "I'm Priya?",
        "so I'm Sam",  # a given name as common as an English word is not taken without a greeting
    ],
)
def test_i_am_with_a_word_or_a_predicate_declares_nothing(say, text: str):
    assert extract_declarations(say(text)) == []


@pytest.mark.parametrize(
    ("text", "alias"),
    [
        ("I'm Mary Jane", "Mary Jane"),
        ("I'm Sam Lee, new here", "Sam Lee"),
        ("hi all, I'm Priya Sharma", "Priya Sharma"),
        ("I am Will Chen.", "Will Chen"),
        ("I'm Sam, new here", "Sam"),  # "new here" introduces as a greeting does
    ],
)
def test_an_english_self_introduction_with_a_given_and_a_family_name_declares_both(
    say, text: str, alias: str
):
    """ "I'm Mary Jane" and "I'm Sam Lee, new here" taught nothing: "I'm X" took one word only."""
    assert aliases(extract_declarations(say(text))) == [("me", alias, Target.SELF)]


@pytest.mark.parametrize(
    "text",
    [
        "I'm Going Home",  # Title Case: neither word a given name
        "hi, I'm Really Tired",
        "I'm So Done",
        "I'm Not Sure",
        "I'm Sam Happy",  # the second word everyday English, no name
        "I'm Sam Brown",  # a family name that is an everyday word: not told from a colour
        "I'm Art Major",
    ],
)
def test_two_capitalised_words_after_i_am_that_are_not_both_names_declare_nothing(say, text: str):
    assert extract_declarations(say(text)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hi I'm Priya", ["Priya"]),  # no English word
        ("hello, I'm Sam", ["Sam"]),  # given names the nickname table knows
        ("hey I'm Will", ["Will"]),
        ("hi I'm Ming", ["Ming"]),  # a name in pinyin
        ("hi I'm Hungry", []),  # everyday English, no given name: the greeting does not make it one
        ("hey I'm Bored", []),
        ("hello I'm Vegan", []),
        ("hi I'm Late", []),  # pinyin letters (la-te) but an everyday word
    ],
)
def test_a_greeting_before_one_english_word_needs_a_name_like_word(say, text: str, expected: list[str]):
    """Found by QA pass 17 (security): after a greeting, "I'm X" took any word not on a short stop list,
    so "hi I'm Hungry" and "hey I'm Bored" gave their speakers a name."""
    assert [d.alias for d in extract_declarations(say(text))] == expected


def test_chinese_self_introductions_are_judged_as_before(say):
    """我是X without a greeting still needs X tagged a person name; 叫我X needs nothing."""
    assert aliases(extract_declarations(say("我是张伟"))) == [("me", "张伟", Target.SELF)]
    assert extract_declarations(say("我是学生")) == []
    assert extract_declarations(say("我是Priya")) == [], "Latin after 我是 is judged as Chinese, as before"
    assert aliases(extract_declarations(say("叫我Pri吧"))) == [("me", "Pri", Target.SELF)]


@pytest.mark.parametrize(
    "text",
    [
        "别叫我小红",
        "请不要再叫我胖子",
        "我讨厌别人叫我小胖",
        "Don't call me Bob",
        "Don’t call me Bob",
        "please never call me Bob",
    ],
)
def test_a_refused_name_is_not_declared(say, text):
    assert extract_declarations(say(text)) == []
    assert extract_declarations(say("以后别叫你小A", mentioned_ids=("alice",))) == []


def test_a_refusal_does_not_hide_a_declaration_beside_it(say):
    decls = extract_declarations(say("你们可以叫我小红，不要叫我红红"))
    assert aliases(decls) == [("me", "小红", Target.SELF)]
    assert aliases(extract_declarations(say("特别想让大家叫我小红"))) == [("me", "小红", Target.SELF)]


def test_name_given_to_the_mentioned_person(say):
    decls = extract_declarations(say("@alice 以后就叫你小A吧", mentioned_ids=("alice",)))
    assert aliases(decls) == [("alice", "小A", Target.MENTIONED)]


def test_name_given_in_a_reply(say):
    decls = extract_declarations(say("we call him Bobby", reply_to_id="bob"))
    assert aliases(decls) == [("bob", "Bobby", Target.REPLIED)]


def test_third_person_naming_with_mention(say):
    decls = extract_declarations(say("我们都管她叫小甜甜", mentioned_ids=("p9",)))
    assert aliases(decls) == [("p9", "小甜甜", Target.MENTIONED)]


def test_naming_without_a_clear_addressee_is_dropped(say):
    assert extract_declarations(say("以后就叫你小A吧")) == []
    assert extract_declarations(say("以后就叫你小A吧", mentioned_ids=("a", "b"))) == []


def test_forwarded_message_declares_nothing(say):
    assert extract_declarations(say("叫我小红吧", forwarded=True)) == []


DECLARING = [
    "叫我小红吧",
    "大家都叫我红红",
    "我叫李明",
    "大家好，我是阿飞，请多关照",
    "我的外号是大壮",
    "you can call me Bob.",
    "my name is Zhang Wei",
    "Hi, I'm Alice!",
    "Hi, I’m Alice!",
    "hello, Im Carol",
    "I go by Jay",
    "@alice 以后就叫你小A吧",
    "we call him Bobby",
    "I'll call you Ace",
    "我们都管她叫小甜甜",
    "我们管他老王",
]


@pytest.mark.parametrize("text", DECLARING)
def test_a_text_that_declares_a_name_could_declare_one(say, text):
    addressing = ({}, {"mentioned_ids": ("p9",)}, {"reply_to_id": "p9"})
    assert any(extract_declarations(say(text, **addressed)) for addressed in addressing), "it declares one"
    assert could_declare(text)


@pytest.mark.parametrize("text", ["[image]", "[image] 周六出发", "time to go", "simple", "他说“叫我小红”"])
def test_the_pre_filter_passes_texts_that_cannot_declare_a_name(say, text):
    assert _MAY_DECLARE.search(text), "the cheap pre-filter lets it through"
    assert not could_declare(text)
    for addressed in ({}, {"mentioned_ids": ("p9",)}, {"reply_to_id": "p9"}):
        assert extract_declarations(say(text, **addressed)) == []


@pytest.mark.parametrize(
    "text",
    [
        "大家好，我是悦悦表姐，有实习内推可以找我",  # QA pass 16: stored as her name
        "大家好，我是产品经理",
        "大家好，我是新人",
        "大家好，我是小王同学",
        "大家好，我是悦悦的表姐",
        "大家好，我是她表姐",
        "我是你爸爸",
        "大家好，我是新来的",
        "Hi, I'm Sam's sister",
        "Hi, I'm the new PM",
    ],
)
def test_a_relation_or_role_after_i_am_is_no_name(say, text: str):
    """X of "我是X" is a relation or a role when its head word is a kinship, tie or role word."""
    assert extract_declarations(say(text)) == []


@pytest.mark.parametrize(
    ("text", "alias"),
    [
        ("我是张伟", "张伟"),
        ("我是小红", "小红"),
        ("大家好，我是红姐", "红姐"),
        ("大家好，我是王老师", "王老师"),
    ],
)
def test_names_and_nicknames_after_i_am_still_count(say, text: str, alias: str):
    assert [d.alias for d in extract_declarations(say(text))] == [alias]


@pytest.mark.parametrize(
    ("text", "alias"),
    [
        ("小吴别叫我伟哥😂 叫大伟", "大伟"),  # QA pass 16: nothing was learnt
        ("别叫我伟哥，叫大伟就行", "大伟"),
        ("不要喊我胖子，叫我阿飞就好", "阿飞"),
    ],
)
def test_the_name_asked_for_after_a_refused_one_is_declared(say, text: str, alias: str):
    (decl,) = extract_declarations(say(text))
    assert (decl.person_id, decl.alias, decl.target) == ("me", alias, Target.SELF)
    assert text[decl.span[0] : decl.span[1]] == alias


@pytest.mark.parametrize(
    "text",
    [
        "叫大伟就行",
        "这事叫老王就行",
        "别叫我伟哥",
        "别叫我起床，叫滴滴吧",
        "别叫我伟哥，叫老王来修",
        "叫大伟吧，别叫我伟哥",
    ],
)
def test_a_bare_call_x_without_a_refusal_before_it_declares_nothing(say, text: str):
    """Without a refused name first, "叫X" may send for someone ("叫老王就行") or order something."""
    assert extract_declarations(say(text)) == []
