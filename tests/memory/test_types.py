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
