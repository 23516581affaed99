import pytest

from memory.persons.aliases import AliasEntry, AliasIndex, How
from memory.persons.names import name_forms


def named(index: AliasIndex, text: str) -> list[tuple[str | None, str]]:
    """Who `find_mentions` finds in `text`, and by which words."""
    return [(m.person_id, text[m.span[0] : m.span[1]]) for m in index.find_mentions(text)]


@pytest.fixture
def index() -> AliasIndex:
    return AliasIndex(
        [
            AliasEntry("red", "小红", "card", 1.0),
            AliasEntry("wang_small", "小王", "card", 1.0),
            AliasEntry("wang_old", "老王", "nickname", 1.0),
            AliasEntry("alice", "Alice", "nickname", 1.0),
            AliasEntry("stone", "石石", "card", 1.0),
            ("dragon", "小龙", "card", 1.0),
        ]
    )


@pytest.mark.parametrize("name", ["小红", "红红", "阿红", "xiaohong", "Xiao Hong", "hong", "晓红", "红儿"])
def test_xiaohong_variants_resolve_to_the_same_person(index: AliasIndex, name: str):
    result = index.resolve(name)
    assert result.person_id == "red"
    assert 0.7 <= result.confidence <= 1.0
    assert not result.ambiguous


@pytest.mark.parametrize(
    ("alias", "asked"),
    [
        ("红红火火", "红红"),
        ("红红火火", "小红"),
        ("红姐", "小红"),
        ("红姐", "红红"),
        ("芳芳芳", "芳姐"),
        ("阿杰", "杰哥"),
    ],
)
def test_a_reduplicated_name_and_a_given_names_honorific_share_its_core(alias: str, asked: str):
    """QA pass 16: 红红 did not find the member 红红火火, nor 小红 the one called 红姐."""
    index = AliasIndex([AliasEntry("red", alias, "nickname", 1.0), AliasEntry("other", "静静", "card", 1.0)])
    found = index.resolve(asked)
    assert (found.person_id, found.matches[0].how) == ("red", How.VARIANT)
    assert named(index, f"{asked}喜欢什么") == [("red", asked)]


@pytest.mark.parametrize(
    ("alias", "asked"), [("张总", "小张"), ("王老师", "老王"), ("红红火火", "火火"), ("王杰", "wang")]
)
def test_a_title_after_a_surname_or_another_part_finds_nobody(alias: str, asked: str):
    """A title after a surname (张总) is shared by everyone of that surname; only AABB's head counts."""
    assert AliasIndex([AliasEntry("x", alias, "nickname", 1.0)]).resolve(asked).matches == []


@pytest.mark.parametrize(
    ("alias", "text"), [("帅帅", "今天见了个帅哥"), ("表表", "表姐好"), ("大大", "大姐你好")]
)
def test_an_everyday_word_ending_in_jie_or_ge_is_no_honorific(alias: str, text: str):
    """帅哥, 表姐, 大姐 are words, not the 帅帅, 表表 or 大大 of the chat with an honorific."""
    index = AliasIndex([AliasEntry("x", alias, "card", 1.0)])
    assert named(index, text) == []
    assert index.resolve(text[-2:]).matches == []


def test_two_members_sharing_a_core_stay_apart():
    index = AliasIndex([AliasEntry("a", "红红火火", "nickname", 1.0), AliasEntry("b", "红姐", "card", 1.0)])
    assert index.resolve("小红").ambiguous and index.resolve("小红").person_id is None
    assert index.resolve("红姐").person_id == "b"


def test_exact_beats_variant_and_confidence_ranks_how(index: AliasIndex):
    exact = index.resolve("小红")
    assert exact.matches[0].how is How.EXACT and exact.confidence == 1.0
    assert index.resolve("xiaohong").matches[0].how is How.PINYIN
    assert index.resolve("红红").matches[0].how is How.VARIANT
    assert index.resolve("xiaohong").confidence > index.resolve("hong").confidence


def test_shared_core_name_is_reported_ambiguous(index: AliasIndex):
    result = index.resolve("王")
    assert result.ambiguous
    assert result.person_id is None
    assert {m.person_id for m in result.matches[:2]} == {"wang_small", "wang_old"}


def test_exact_name_is_not_ambiguous_even_with_a_similar_person(index: AliasIndex):
    result = index.resolve("小王")
    assert result.person_id == "wang_small"
    assert not result.ambiguous


def test_same_alias_for_two_people_is_ambiguous():
    idx = AliasIndex([("a", "Sam", "nickname", 1.0), ("b", "sam", "card", 1.0)])
    assert idx.resolve("SAM").ambiguous


def test_a_first_name_asked_for_finds_the_full_name():
    idx = AliasIndex(
        [
            ("sam", "Sam O'Connor", "card", 1.0),
            ("mj", "Mary-Jane Watson", "card", 1.0),
            ("kim", "Kim", "card", 1.0),
            ("kim_lee", "Kim Lee", "nickname", 1.0),
        ]
    )
    assert idx.resolve("sam").person_id == "sam"
    assert idx.resolve("Mary-Jane").person_id == "mj"
    # The exact name wins over another's first name; two full names sharing it are ambiguous.
    assert idx.resolve("Kim").person_id == "kim"
    assert AliasIndex([("a", "Sam Lee", "card", 1.0), ("b", "Sam Wu", "card", 1.0)]).resolve("Sam").ambiguous
    # A first name that is everyday English (wordfreq) is not taken for the person inside text.
    assert idx.find_mentions("Sam you stood in the fire") == []


ENGLISH_CHAT = AliasIndex(
    [
        ("sam", "Sam O'Connor", "card", 1.0),
        ("liz", "Elizabeth Park", "card", 1.0),
        ("mj", "Mary-Jane Watson", "card", 1.0),
        ("will", "Will Turner", "card", 1.0),
        ("pri", "Priya Raman", "card", 1.0),
        ("grace", "Grace Nakamura", "card", 1.0),
        ("rose", "Rose Kowalczyk", "card", 1.0),
        ("may", "May Lindqvist", "card", 1.0),
        ("bill", "Bill Okafor", "card", 1.0),
        ("mark", "Mark Abernathy", "card", 1.0),
    ]
)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("did O'Connor send the slides?", [("sam", "O'Connor")]),
        ("ask Priya about O’Connor's deck", [("pri", "Priya"), ("sam", "O’Connor")]),
        ("Elizabeth said the budget is tight", [("liz", "Elizabeth")]),
        ("Watson and Turner are late again", [("mj", "Watson"), ("will", "Turner")]),
        ("what did Mary-Jane say?", [("mj", "Mary-Jane")]),
        ("昨天Raman和Okafor都没来", [("pri", "Raman"), ("bill", "Okafor")]),
        ("I met Sam O'Connor at the Kowalczyk party", [("sam", "Sam O'Connor"), ("rose", "Kowalczyk")]),
        # An everyday word (by wordfreq) is a name where English would write the word small.
        ("ask Sam about the deck", [("sam", "Sam")]),
        ("ask Will about it", [("will", "Will")]),
        ("thanks Mark, that helps", [("mark", "Mark")]),
        ("I told Grace and Rose already", [("grace", "Grace"), ("rose", "Rose")]),
    ],
)
def test_a_word_of_a_members_full_name_alone_in_text_finds_them(text: str, found: list[tuple[str, str]]):
    """Found by a QA pass of an English group: "did O'Connor send the slides?" brought no card to the
    reply context and no person to recall, a first or last name being found only when asked for."""
    assert named(ENGLISH_CHAT, text) == found


@pytest.mark.parametrize(
    "text",
    [
        "elizabeth said the budget is tight",  # a name part counts only written with a capital
        "did oconnor send it?",
        "Will you send the slides?",  # an everyday English word's capital at a sentence start
        "Grace period ends Friday",
        "Sure. Mark it as done",
        "ASK SAM ABOUT IT",  # every word has a capital: none says "name"
        "Can You Ask Will About It",
        "a Rose for everyone",
        "see you in May",
        "May I ask?",
        "Bill me later",
        "Mark it as done",
        "we met at the Park",
        "Jane is here",  # no part of "Mary-Jane"
    ],
)
def test_a_name_part_in_text_that_is_lower_case_or_everyday_english_finds_nobody(text: str):
    assert ENGLISH_CHAT.find_mentions(text) == []


# Members whose whole name is an everyday English word.
EVERYDAY_NAMES = AliasIndex(
    [
        ("will", "Will", "card", 1.0),
        ("mark", "Mark", "card", 1.0),
        ("may", "May", "card", 1.0),
        ("bob", "Bob", "card", 1.0),
        ("sam", "Sam", "card", 1.0),
    ]
)


@pytest.mark.parametrize("index", [ENGLISH_CHAT, EVERYDAY_NAMES], ids=["full-names", "whole-names"])
@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Will is coming tonight", [("will", "Will")]),
        ("Mark said the deck is done", [("mark", "Mark")]),
        ("ok. Will can't make it", [("will", "Will")]),
        ("Mark, you there?", [("mark", "Mark")]),
        ("Will's car is outside", [("will", "Will")]),
    ],
)
def test_a_members_own_name_at_a_sentence_start_finds_them_as_a_subject(
    index: AliasIndex, text: str, found: list[tuple[str, str]]
):
    """A capital at a sentence start proves nothing, but a member's own name there, followed as a
    subject is (a verb, a comma calling them, a possessive), names them."""
    assert named(index, text) == found


@pytest.mark.parametrize(
    "text",
    [
        "I will come tomorrow",  # a member called "Will" was found in every "will"
        "you may be right",
        "mark it down",
        "ask will about it",
        "Will you send the slides?",
        "Mark it as done",
        "May I ask?",
        "Will Is Here",  # Title Case
        "I think will is a virtue",
    ],
)
def test_a_whole_name_that_is_an_everyday_word_finds_nobody_used_as_the_word(text: str):
    assert EVERYDAY_NAMES.find_mentions(text) == []


def test_a_whole_name_that_is_an_everyday_word_is_found_beside_chinese_and_as_a_subject():
    assert named(EVERYDAY_NAMES, "sam你来了吗") == [("sam", "sam")]
    assert named(EVERYDAY_NAMES, "@will 在吗") == [("will", "will")]
    assert named(EVERYDAY_NAMES, "Bob lives in Rome") == [("bob", "Bob")]


def test_a_nickname_the_table_gives_is_no_members_own_name_at_a_sentence_start():
    """ "Will" is a nickname of William by the table, not a name William goes by in the chat."""
    assert NICKNAMED.find_mentions("Will is late again") == []
    assert [m.person_id for m in NICKNAMED.find_mentions("ask Will about it")] == ["william"]


def test_a_name_part_two_members_share_finds_neither_in_text_and_is_ambiguous_asked_for():
    idx = AliasIndex([("a", "Priya Raman", "card", 1.0), ("b", "Priya Shah", "card", 1.0)])
    assert idx.find_mentions("ask Priya about it") == []
    assert idx.resolve("Priya").ambiguous
    # An exact name wins over a word of another's full name, in text as asked for.
    idx = AliasIndex([("a", "Priya Raman", "card", 1.0), ("b", "Priya", "card", 1.0)])
    assert [m.person_id for m in idx.find_mentions("ask Priya about it")] == ["b"]
    assert idx.resolve("Priya").person_id == "b"


def test_a_last_name_asked_for_finds_the_full_name():
    assert ENGLISH_CHAT.resolve("Watson").person_id == "mj"
    assert ENGLISH_CHAT.resolve("o'connor").person_id == "sam"
    assert ENGLISH_CHAT.resolve("Park").person_id == "liz", "asked for as a name, a word is a name"


NICKNAMED = AliasIndex(
    [
        ("liz", "Elizabeth Park", "card", 1.0),
        ("rob", "Robert", "card", 1.0),
        ("bob", "Bob Okafor", "card", 1.0),
        ("william", "William Hughes", "person_name", 1.0),
        ("pri", "Priya Raman", "card", 1.0),
    ]
)


@pytest.mark.parametrize(
    ("name", "person"),
    [("Liz", "liz"), ("lizzie", "liz"), ("Beth", "liz"), ("Will", "william")],
)
def test_an_english_nickname_asked_for_finds_the_given_name(name: str, person: str):
    """Found by a QA pass of an English group: "/who Liz" answered "I don't know" beside Elizabeth Park."""
    result = NICKNAMED.resolve(name)
    assert result.person_id == person and result.matches[0].how is How.VARIANT


def test_an_exact_name_or_a_word_of_one_wins_over_a_nickname_and_two_candidates_are_ambiguous():
    # Robert (exact) and Bob Okafor (Bob is a nickname of Robert) are both in the chat.
    assert NICKNAMED.resolve("Robert").person_id == "rob"
    assert NICKNAMED.resolve("Bob").person_id == "bob"
    # Rob is a nickname of Robert and of Bob: two people.
    assert NICKNAMED.resolve("Rob").ambiguous
    assert NICKNAMED.find_mentions("ask Rob about it") == []
    # The table gives Robert the nickname Bill too: with Robert and William in the chat, Bill is either.
    assert NICKNAMED.resolve("Bill").ambiguous
    # Alone in the chat, each finds the other.
    assert AliasIndex([("rob", "Robert Chen", "card", 1.0)]).resolve("Bob").person_id == "rob"
    assert AliasIndex([("bob", "Bob", "card", 1.0)]).resolve("Robert").person_id == "bob"
    assert AliasIndex([("w", "William Hughes", "card", 1.0)]).resolve("Bill").person_id == "w"
    # A word of a full name wins over a nickname of another's.
    idx = AliasIndex([("liz", "Liz Chen", "card", 1.0), ("eliza", "Elizabeth Park", "card", 1.0)])
    assert idx.resolve("Liz").person_id == "liz"


def test_an_english_nickname_inside_text_finds_its_member_when_a_name_word_would():
    assert named(NICKNAMED, "Liz said the budget is tight, ask Lizzie") == [("liz", "Liz"), ("liz", "Lizzie")]
    assert NICKNAMED.find_mentions("Bill me later, liz") == [], "everyday English, lower case"


CHINESE_CHAT = AliasIndex(
    [
        ("red", "小红", "card", 1.0),
        ("wang", "老王", "nickname", 1.0),
        ("zhao", "赵一鸣", "card", 1.0),
        ("zhao", "老赵", "self", 0.9),
        ("muller", "托马斯·穆勒", "card", 1.0),
        ("ming", "阿明", "card", 1.0),
    ]
)


@pytest.mark.parametrize(
    ("text", "found"),
    [  # what find_mentions answered before words of Latin full names were looked for in text
        ("红红说周末去爬山", [("red", (0, 2), 0.85, How.VARIANT)]),
        ("小红和老王去吃饭了", [("red", (0, 2), 1.0, How.EXACT), ("wang", (3, 5), 1.0, How.EXACT)]),
        ("事实上我喜欢红色", []),
        ("一鸣说他来", []),
        ("昨天托马斯·穆勒进球了", [("muller", (2, 8), 1.0, How.EXACT)]),
        ("xiao hong 在吗", [("red", (0, 9), 0.9, How.PINYIN)]),
        ("老赵推荐的咖啡店", [("zhao", (0, 2), 0.98, How.EXACT)]),
        ("明天阿明和Tom一起来", [("ming", (2, 4), 1.0, How.EXACT)]),
        ("王老师好", []),
        ("赵一鸣和Sam O'Connor", [("zhao", (0, 3), 1.0, How.EXACT)]),
    ],
)
def test_names_in_a_chinese_chat_are_found_as_before(
    text: str, found: list[tuple[str, tuple[int, int], float, How]]
) -> None:
    mentions = CHINESE_CHAT.find_mentions(text)
    assert [(m.person_id, m.span, m.confidence, m.how) for m in mentions] == found


def test_alias_weight_breaks_ties():
    idx = AliasIndex([("a", "Sam", "card", 1.0), ("b", "Sam", "old-nickname", 0.0)])
    result = idx.resolve("sam")
    assert result.person_id == "a" and not result.ambiguous


def test_english_typo_is_fuzzy_and_chinese_different_char_is_not(index: AliasIndex):
    typo = index.resolve("Alicee")
    assert typo.person_id == "alice" and typo.matches[0].how is How.FUZZY
    assert typo.confidence < 0.9
    assert index.resolve("小江").matches == []


def test_initials(index: AliasIndex):
    result = index.resolve("xh")
    assert result.person_id == "red" and result.matches[0].how is How.INITIALS


def test_unknown_and_empty_names(index: AliasIndex):
    assert index.resolve("Zed").matches == []
    assert index.resolve("").person_id is None


def test_find_mentions_in_a_sentence_with_spans(index: AliasIndex):
    text = "昨天小红和Alice去吃饭了"
    mentions = index.find_mentions(text)
    assert [(m.person_id, text[m.span[0] : m.span[1]]) for m in mentions] == [
        ("red", "小红"),
        ("alice", "Alice"),
    ]


def test_find_mentions_variants_and_latin_windows(index: AliasIndex):
    text = "红红说 xiao hong 很好"
    mentions = index.find_mentions(text)
    assert [m.person_id for m in mentions] == ["red", "red"]
    assert text[mentions[1].span[0] : mentions[1].span[1]] == "xiao hong"


def test_find_mentions_skips_common_words_and_word_parts(index: AliasIndex):
    assert index.find_mentions("事实上我喜欢红色") == []
    assert index.find_mentions("I long for the old days") == []
    assert index.find_mentions("Alicent is here") == []


JOINED = AliasIndex(
    [
        ("sam", "Sam O'Connor", "card", 1.0),
        ("mj", "Mary-Jane", "card", 1.0),
        ("dee", "D’Angelo", "nickname", 1.0),
        ("muller", "托马斯·穆勒", "card", 1.0),
        ("red", "小红", "card", 1.0),
    ]
)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("I met Sam O'Connor yesterday", [("sam", "Sam O'Connor")]),
        ("sam o’connor said hi", [("sam", "sam o’connor")]),  # a typographic apostrophe, lower case
        ("Sam O'Connor's idea was good", [("sam", "Sam O'Connor")]),  # a possessive is no part of it
        ("what did Mary-Jane say?", [("mj", "Mary-Jane")]),
        ("Mary‐Jane and D'Angelo came", [("mj", "Mary‐Jane"), ("dee", "D'Angelo")]),
        ("昨天Sam O'Connor和小红去吃饭了", [("sam", "Sam O'Connor"), ("red", "小红")]),
        ("Mary-Jane的猫叫什么", [("mj", "Mary-Jane")]),
        ("昨天托马斯·穆勒进球了", [("muller", "托马斯·穆勒")]),
        ("托马斯・穆勒说的", [("muller", "托马斯・穆勒")]),  # the katakana middle dot of Japanese input
    ],
)
def test_names_joined_by_an_apostrophe_hyphen_or_middle_dot_are_found_in_text(
    text: str, found: list[tuple[str, str]]
) -> None:
    """Found by a QA pass: the joint broke the name in two, so "Sam O'Connor" and "Mary-Jane" were never
    found inside a message or a question, and recall did not resolve them to the person."""
    assert named(JOINED, text) == found


def test_a_dotted_name_is_found_when_it_is_the_longest_name_known() -> None:
    """The dot is no character of the name: a span as long as the longest name plus its dots is read."""
    idx = AliasIndex([("muller", "托马斯·穆勒", "card", 1.0)])
    text = "昨天托马斯·穆勒进球了"
    assert [(m.person_id, text[m.span[0] : m.span[1]]) for m in idx.find_mentions(text)] == [
        ("muller", "托马斯·穆勒")
    ]


def test_a_long_hyphenated_string_is_not_read_as_one_name_of_thousands_of_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs of Latin parts joined by hyphens are bounded in length: a message of 3,000 hyphenated
    words is read in work growing with its length, not its square (4.5 million runs)."""
    from memory.persons import aliases

    looked = 0
    real = aliases._glued_before

    def counted(norm: str, at: int) -> bool:
        nonlocal looked
        looked += 1
        return real(norm, at)

    monkeypatch.setattr(aliases, "_glued_before", counted)
    text = "-".join(f"w{i}" for i in range(3000)) + " Mary-Jane"
    assert [m.person_id for m in JOINED.find_mentions(text)] == ["mj"]
    assert looked < 3002 * (2 * aliases.LATIN_NAME_PARTS + 1)


def test_a_name_is_not_found_as_part_of_a_longer_joined_name() -> None:
    """Jane is not Mary-Jane, nor Connor O'Connor; a possessive still ends a name."""
    idx = AliasIndex([("jane", "Jane", "card", 1.0), ("connor", "Connor", "card", 1.0)])
    assert idx.find_mentions("Mary-Jane and O'Connor came") == []
    assert idx.find_mentions("Jane-Marie is here") == []
    assert [m.person_id for m in idx.find_mentions("Jane's cat met Connor")] == ["jane", "connor"]


def test_find_mentions_name_glued_to_verb_by_jieba(index: AliasIndex):
    mentions = index.find_mentions("小红住在上海，老王也是")
    assert [m.person_id for m in mentions] == ["red", "wang_old"]


def test_find_mentions_reports_ambiguity_instead_of_guessing():
    idx = AliasIndex([("a", "小王", "card", 1.0), ("b", "小王", "card", 1.0)])
    (mention,) = idx.find_mentions("今天小王没来")
    assert mention.person_id is None
    assert set(mention.candidates) == {"a", "b"}


def test_spans_survive_full_width_text(index: AliasIndex):
    text = "ＡＬＩＣＥ来了"
    (mention,) = index.find_mentions(text)
    assert mention.person_id == "alice" and text[mention.span[0] : mention.span[1]] == "ＡＬＩＣＥ"


def test_zero_width_characters_inside_a_name_do_not_hide_it(index: AliasIndex):
    text = "今天小\u200b红和\u2060Ali\u200dce来了"
    mentions = index.find_mentions(text)
    assert [(m.person_id, text[m.span[0] : m.span[1]]) for m in mentions] == [
        ("red", "小\u200b红"),
        ("alice", "Ali\u200dce"),
    ]


def test_a_name_in_nfd_form_is_found_whole():
    index = AliasIndex([("zoe", "Zoë", "card", 1.0), ("jose", "José", "card", 1.0)])
    text = "Zoe\u0308 and Jose\u0301 came"
    mentions = index.find_mentions(text)
    assert [(m.person_id, text[m.span[0] : m.span[1]]) for m in mentions] == [
        ("zoe", "Zoe\u0308"),
        ("jose", "Jose\u0301"),
    ]


def test_bad_entry_is_rejected():
    with pytest.raises(ValueError, match="person_id"):
        AliasIndex([("", "小红", "card", 1.0)])


def test_accents_are_a_variant_for_latin_names_only():
    index = AliasIndex(
        [("zoe", "Zoë", "card", 1.0), ("george", "ジョージ", "card", 1.0), ("zoey", "Zoey", "card", 1.0)]
    )
    found = index.resolve("Zoe")
    assert found.person_id == "zoe" and found.matches[0].how is How.VARIANT
    assert found.matches[0].confidence == 0.9
    assert index.resolve("Zoë").matches[0].how is How.EXACT
    assert index.resolve("ショーシ").matches == [], "a kana's voicing mark is no accent"


def test_names_in_a_long_text_are_found_without_the_pinyin_of_every_span():
    """find_mentions looks every span of the text up; the accent-free form of a span needs no pinyin,
    which pypinyin worked out afresh for each span (0.5 s of every 1.4 s over a 20,000-char 接龙)."""
    index = AliasIndex([("red", "小红", "card", 1.0), ("jose", "José", "card", 1.0)])
    filler = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000))
    text = f"{filler}，小红和Jose来了"
    name_forms.cache_clear()
    mentions = index.find_mentions(text)
    assert [(m.person_id, text[m.span[0] : m.span[1]], m.how) for m in mentions] == [
        ("red", "小红", How.EXACT),
        ("jose", "Jose", How.VARIANT),
    ]
    assert name_forms.cache_info().misses <= 2  # the Latin word only, not the 3,000 characters' spans
