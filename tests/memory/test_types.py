"""ChatMessage refuses what would break storage, jobs or recall later, naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.types import EARLIEST_TIME, LATEST_TIME, InvalidMessage
from tests.conftest import make_message


@pytest.mark.parametrize(
    "when",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=8))),  # year 0 once in UTC
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-8))),  # year 10000 in UTC
        EARLIEST_TIME - timedelta(seconds=1),
        LATEST_TIME,
    ],
)
def test_a_time_out_of_range_is_invalid(when: datetime) -> None:
    with pytest.raises(InvalidMessage, match=r"time .* is out of range \(1970-01-01 to 9000-01-01 UTC\)"):
        make_message(1, time=when)


def test_the_ends_of_the_range_are_valid() -> None:
    assert make_message(1, time=EARLIEST_TIME).time == datetime(1970, 1, 1, tzinfo=UTC)
    assert make_message(2, time=LATEST_TIME - timedelta(seconds=1)).time.year == 8999


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("chat_id", "g\ud800"),
        ("message_id", "m2\ud800"),
        ("sender_id", "\udc00u1"),
        ("platform", "replay\udfff"),
        ("reply_to", "m\ud800"),
        ("mentions", ("u1", "u\ud800")),
    ],
)
def test_an_id_with_a_lone_surrogate_is_invalid(field: str, value: object) -> None:
    with pytest.raises(InvalidMessage, match=rf"^{field} .* is not valid Unicode \(a lone surrogate"):
        make_message(1, **{field: value})


def test_lone_surrogates_in_text_fields_are_still_dropped() -> None:
    message = make_message(1, text="a\ud800b", sender_name="n\udc00", chat_name="c\ud800")
    assert (message.text, message.sender_name, message.chat_name) == ("ab", "n", "c")


def test_names_lose_zero_width_and_bidi_controls_but_the_text_is_kept_as_sent() -> None:
    """A group card, nickname or chat name holding an RTL override or a zero-width space reached
    people's names, aliases, the reply context, `qunyi people` and the console as it was."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    text = "\u202e看我\u200b的 " + family
    message = make_message(
        1,
        text=text,
        sender_name="\u202eevil\u202c",
        sender_card=f"小\u200b红{family}",
        chat_name="群\u2067名\u2069",
    )
    assert (message.sender_name, message.sender_card, message.chat_name) == ("evil", f"小红{family}", "群名")
    assert message.text == text
    empty = make_message(2, sender_card="\u200b\u200e", sender_name="\ufeff", chat_name="\u061c\u180e")
    assert (empty.sender_card, empty.sender_name, empty.chat_name) == ("", "", "")
    assert empty.display_name == "u1", "a name of nothing but such characters is no name"


def test_names_lose_every_character_that_shows_nothing_but_emoji_and_variants_stay_whole() -> None:
    """Only zero-width and bidi controls were dropped: a soft hyphen, a Hangul filler (the usual
    "blank name"), a tag or a combining grapheme joiner still made a name look like another or like
    none. A variation selector after what it varies and an emoji flag's tags stay."""
    for hidden in ("\u00ad", "\u3164", "\uffa0", "\u115f", "\u034f", "\u206a", "\U000e0041", "\u17b4"):
        message = make_message(1, sender_card=f"小{hidden}红", sender_name=hidden, chat_name=f"{hidden}群")
        assert (message.sender_card, message.sender_name, message.chat_name) == ("小红", "", "群"), hidden
    england = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    kept = f"葛\U000e0100 ❤\ufe0f 1\ufe0f\u20e3 {england}"
    assert make_message(2, sender_card=kept).sender_card == kept
    assert make_message(3, sender_card="\ufe0f\u00ad").sender_card == "", "a selector varying nothing"
