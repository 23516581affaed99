from __future__ import annotations

import pytest

from adapters.onebot_v11.message import (
    escape,
    normalize_message,
    parse_cq,
    reply_target,
    to_cq,
    to_neutral,
    unescape,
)
from memory.types import InvalidMessage, SegmentKind


def test_escape_round_trip_with_all_special_characters() -> None:
    text = "a&b [x], &#91;literal&#93;"
    assert unescape(escape(text)) == text
    assert unescape(escape(text, in_param=True)) == text
    assert escape("[1,2]") == "&#91;1,2&#93;"
    assert escape("[1,2]", in_param=True) == "&#91;1&#44;2&#93;"


def test_parse_cq_splits_text_and_codes_and_unescapes() -> None:
    segments = parse_cq(
        "hi &#91;you&#93; [CQ:at,qq=123][CQ:image,file=a&#44;b.jpg,url=http://x/?a=1&amp;b=2]end"
    )
    assert segments == [
        {"type": "text", "data": {"text": "hi [you] "}},
        {"type": "at", "data": {"qq": "123"}},
        {"type": "image", "data": {"file": "a,b.jpg", "url": "http://x/?a=1&b=2"}},
        {"type": "text", "data": {"text": "end"}},
    ]


def test_to_cq_is_the_inverse_of_parse_cq() -> None:
    segments = [
        {"type": "reply", "data": {"id": "-5"}},
        {"type": "text", "data": {"text": "A&B [ok], fine"}},
        {"type": "share", "data": {"url": "http://x/?a,b", "title": "t[1]"}},
    ]
    cq = to_cq(segments)
    assert (
        cq == "[CQ:reply,id=-5]A&amp;B &#91;ok&#93;, fine[CQ:share,url=http://x/?a&#44;b,title=t&#91;1&#93;]"
    )
    assert parse_cq(cq) == segments


def test_unclosed_cq_code_stays_text() -> None:
    assert parse_cq("[CQ:at,qq=1") == [{"type": "text", "data": {"text": "[CQ:at,qq=1"}}]


def test_neutral_conversion_of_mentions_reply_and_media() -> None:
    converted = to_neutral(
        [
            {"type": "reply", "data": {"id": -77}},
            {"type": "at", "data": {"qq": 10001}},
            {"type": "at", "data": {"qq": "all"}},
            {"type": "text", "data": {"text": " 看图"}},
            {"type": "image", "data": {"file": "f.jpg", "url": "https://img/1"}},
            {"type": "face", "data": {"id": "14"}},
            {"type": "mysterious", "data": {}},
        ],
        names={"10001": "群忆"},
    )
    assert converted.reply_to == "-77"
    assert converted.mentions == ("10001",)
    assert converted.text == "@群忆@全体成员 看图[image][face][mysterious]"
    kinds = [s.kind for s in converted.segments]
    assert kinds == [
        SegmentKind.REPLY,
        SegmentKind.MENTION,
        SegmentKind.MENTION,
        SegmentKind.TEXT,
        SegmentKind.IMAGE,
        SegmentKind.FACE,
        SegmentKind.OTHER,
    ]
    assert converted.segments[4].target == "https://img/1"


@pytest.mark.parametrize("bad", [42, [{"data": {}}], [{"type": "text", "data": "x"}]])
def test_malformed_messages_raise_invalid_message(bad: object) -> None:
    with pytest.raises(InvalidMessage):
        normalize_message(bad)


def test_null_segment_data_counts_as_absent() -> None:
    converted = to_neutral(
        [
            {"type": "reply", "data": {"id": None}},
            {"type": "at", "data": {"qq": None}},
            {"type": "text", "data": {"text": None}},
            {"type": "text", "data": {"text": "hi"}},
        ]
    )
    assert converted.text == "hi"
    assert converted.mentions == () and converted.reply_to is None
    assert reply_target(normalize_message([{"type": "reply", "data": {"id": None}}])) is None
    assert reply_target(normalize_message("[CQ:reply,id=-12]")) == "-12"
