"""Pulling JSON out of model answers."""

from __future__ import annotations

import pytest

from bot.llm.jsontext import NoJSON, extract_json, strip_reasoning


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
