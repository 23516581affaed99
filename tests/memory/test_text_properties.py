"""Property tests of the text helpers every untrusted string goes through: cuts end on a grapheme
boundary within the limit, cleaning is idempotent, quoted chat text cannot start a context line, and a
ChatMessage from any strings is valid or InvalidMessage."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import regex
from hypothesis import example, given
from hypothesis import strategies as st

from memory.context.render import CONTINUATION, neutralize
from memory.persons import timeline_text
from memory.persons.names import clean_name
from memory.text import drop_invisible, holds_invisible, loggable, truncate
from memory.types import ChatMessage, InvalidMessage, clean_text
from tests.fuzzing import texts

GRAPHEME = regex.compile(r"\X")
# Long text of whole graphemes that are more than one code point: emoji sequences, flags, combining marks.
CLUSTERS = [
    "👨‍👩‍👧",
    "🇨🇳",
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "é",
    "❤️",
    "각",
    "ก์",
    "\u0600١",
]
long_texts = st.lists(st.one_of(texts, st.sampled_from(CLUSTERS)), max_size=12).map("".join)


def graphemes(text: str) -> list[str]:
    return GRAPHEME.findall(text)


@given(long_texts, st.integers(min_value=-2, max_value=60), st.sampled_from(["…", "...", "", "‥‥"]))
def test_truncate_keeps_whole_graphemes_within_the_limit(text: str, limit: int, ellipsis: str) -> None:
    cut = truncate(text, limit, ellipsis)
    assert len(cut) <= max(limit, 0)
    if cut == text:
        return
    kept = cut.removesuffix(ellipsis) if len(ellipsis) < limit else ""
    assert graphemes(text)[: len(graphemes(kept))] == graphemes(kept)


@given(long_texts, st.integers(min_value=1, max_value=60))
def test_a_log_excerpt_holds_no_control_character_and_no_broken_grapheme(text: str, limit: int) -> None:
    def escaped(c: str) -> bool:
        return unicodedata.category(c) == "Cc" or "\u2028" <= c <= "\u202e" or "\u2066" <= c <= "\u2069"

    shown = loggable(text, limit)
    assert not any(escaped(c) for c in shown)
    cut = truncate(text, limit)
    if not any(escaped(c) for c in cut):
        assert shown == cut  # nothing to escape: the grapheme-safe cut as it is


@given(texts)
@example("[0]:")
def test_cleaning_names_and_text_is_idempotent(text: str) -> None:
    for clean in (clean_name, drop_invisible, clean_text):
        once = clean(text)
        assert clean(once) == once, clean.__name__


def test_a_name_wrapped_in_brackets_with_a_trailing_decoration_loses_both_at_once() -> None:
    """The brackets were looked at before the trailing "~" was trimmed, so the first cleaning kept them
    and a second took them off: the same card gave two names."""
    assert clean_name("【阿红】~") == clean_name("【阿红】") == "阿红"
    assert clean_name("~(Tom)") == "Tom" and clean_name("Tom(汤姆)~") == "Tom(汤姆)"


@given(long_texts)
def test_text_holding_no_hidden_character_is_never_changed_by_dropping_them(text: str) -> None:
    if not holds_invisible(text):
        assert drop_invisible(text) == text
    assert holds_invisible(text) == (text != regex.sub(r"\p{Default_Ignorable_Code_Point}", "", text))


unbracketed = texts.filter(lambda text: "」" not in text)  # a name closing the quote reads ambiguously


@given(unbracketed, unbracketed, st.sampled_from(["self", "others"]))
def test_the_timeline_name_lines_read_back_as_written(card: str, previous: str, source: str) -> None:
    assert timeline_text.read_card_change(timeline_text.card_change(card, previous)) == (card, previous)
    assert timeline_text.read_declared(timeline_text.declared(source, card)) == (source, card)
    assert timeline_text.read_card_change(f"去了「{card}」") is None
    assert timeline_text.read_declared(f"搬到「{card}」") is None


@given(long_texts)
def test_a_name_keeps_its_graphemes_whole(text: str) -> None:
    name = clean_name(text)
    assert name == name.strip() and drop_invisible(name) == name


@given(long_texts)
def test_neutralized_text_cannot_start_a_line_or_open_a_block(text: str) -> None:
    lines = neutralize(text).splitlines()
    assert all(line.startswith(CONTINUATION.lstrip("\n")) for line in lines[1:])
    assert not set("<>＜＞﹤﹥") & set(neutralize(text))


@given(
    st.fixed_dictionaries({name: texts for name in ("platform", "chat_id", "message_id", "sender_id")}),
    texts,
    texts,
)
def test_a_message_from_any_strings_is_valid_or_invalid_message(
    ids: dict[str, str], text: str, name: str
) -> None:
    try:
        message = ChatMessage(
            text=text,
            sender_name=name,
            sender_card=name,
            time=datetime(2026, 3, 1, tzinfo=UTC),
            reply_to=name or None,
            mentions=(name,),
            **ids,
        )
    except InvalidMessage:
        return
    assert message.sender_name == drop_invisible(message.sender_name)
    message.text.encode("utf-8")
    message.sender_name.encode("utf-8")
