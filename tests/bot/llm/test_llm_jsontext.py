"""Pulling JSON out of model answers."""

from __future__ import annotations

import json

import pytest

from bot.llm.jsontext import MAX_STARTS, NoJSON, extract_json, strip_reasoning
from memory import untrusted_json


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"话题": "周末爬山"}\n```', {"话题": "周末爬山"}),
        ("Here you go:\n```\n[1, 2]\n```\nHope it helps.", [1, 2]),
        ('好的，结果如下：{"ok": true, "n": [1]} 以上。', {"ok": True, "n": [1]}),
        ('<think>用户想要 {json}</think>\n{"ok": false}', {"ok": False}),
        ('See note [1] for details: {"k": "v"}', {"k": "v"}),
    ],
)
def test_extracts_json_from_common_answer_shapes(text: str, expected: object) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "<think>x</think>", "{title: broken", "no json here"])
def test_raises_no_json_with_a_reason(text: str) -> None:
    with pytest.raises(NoJSON):
        extract_json(text)


def test_strip_reasoning_keeps_the_answer() -> None:
    assert strip_reasoning("<think>\n嗯……\n</think>\n你好") == "你好"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("用户在问在不在，我应该说在。\n</think>\n\n在的", "在的"),  # the opening tag was in the prompt
        ("<think>用户在问在不在，我先想想", ""),  # the answer ran out of tokens while reasoning
        ("  <THINK>a</THINK> b <think>c</think>d", "b d"),
        ("用 <b> 标签加粗", "用 <b> 标签加粗"),
    ],
)
def test_strip_reasoning_drops_reasoning_missing_a_tag(text: str, expected: str) -> None:
    assert strip_reasoning(text) == expected


def test_json_after_reasoning_whose_opening_tag_was_in_the_prompt() -> None:
    assert extract_json('先想 {"draft": 1} 再改</think>{"ok": true}') == {"ok": True}


def test_lone_surrogates_and_control_characters_in_json_strings_are_dropped() -> None:
    """A JSON escape can spell a lone surrogate (`\\ud800`) or a NUL: neither can be stored in SQLite
    or sent in the next request as UTF-8, so they go from every string of the answer, keys too."""
    answer = '{"meaning": "永远\\ud800的\\u0000神", "list": ["a\\udfffb", {"k\\u0007": "😀\\ud83d\\ude00"}]}'
    assert extract_json(answer) == {"meaning": "永远的神", "list": ["ab", {"k": "😀😀"}]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a<think>b<think>c</think>d", "ad"),  # a block ends at the first closing tag after it
        ("a</think>b<think>c", "b<think>c"),  # up to the last closing tag; the unclosed opening stays
        ("x" + "<think>" * 200_000, "x" + "<think>" * 200_000),
        ("<think>" * 200_000 + "</think>答", "答"),
    ],
)
def test_reasoning_tags_are_paired_in_one_pass(text: str, expected: str) -> None:
    """A model answering a megabyte of `<think>` without a closing tag: each opening tag used to send a
    regex to the end of the answer looking for one (minutes while the bot's loop waited); the tags are
    now paired in one pass, with the same result."""
    assert strip_reasoning(text) == expected


@pytest.mark.parametrize("opener", ["{", "["])
def test_an_answer_of_many_openers_is_tried_from_a_few_of_them(
    opener: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A truncated answer of nested lists, or a long run of `[`, holds an opener per character: parsing
    from each of them (each parse reading on to the end of the answer) took minutes on a few hundred
    kilobytes, the bot's loop waiting. Only the first `MAX_STARTS` of each opener are tried."""
    tries: list[int] = []
    real = untrusted_json.raw_decode

    def counted(decoder: json.JSONDecoder, text: str, start: int) -> tuple[object, int]:
        tries.append(start)
        return real(decoder, text, start)

    monkeypatch.setattr(untrusted_json, "raw_decode", counted)
    with pytest.raises(NoJSON):
        extract_json("答案：" + (opener + '"a",') * 50_000)
    assert len(tries) == MAX_STARTS


def test_json_after_a_few_stray_openers_is_still_found() -> None:
    answer = "集合 {a} 与 {b}、列表 [x]、" * 5 + '结果：{"ok": true}'
    assert extract_json(answer) == {"ok": True}
