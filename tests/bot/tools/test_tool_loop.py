"""The reply tool loop: tool calls are run and fed back, rounds and time are bounded."""

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.tools import ToolContext, build_registry, run_with_tools
from bot.tools.loop import RESULT_TITLE
from memory.context.render import render_section
from memory.notes import NoteStore


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


class ScriptedModel:
    """Plays back assistant messages; records what it was offered."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.offered: list[bool] = []
        self.seen: list[list[dict[str, Any]]] = []

    async def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        self.offered.append(tools is not None)
        self.seen.append(list(messages))
        return self.replies.pop(0)


async def test_tool_results_reach_the_model(tmp_path: Path) -> None:
    notes = NoteStore(tmp_path)
    await notes.set("规则", "不许刷屏")
    model = ScriptedModel(
        [
            {"content": None, "tool_calls": [_call("c1", "note_get", {"name": "规则"})]},
            {"content": "群规是不许刷屏。"},
        ]
    )
    ctx = ToolContext(chat="g1", notes=notes)
    result = await run_with_tools(model, [{"role": "user", "content": "群规？"}], build_registry(), ctx)
    assert result.text == "群规是不许刷屏。"
    assert result.calls == [("note_get", '{"name": "\\u89c4\\u5219"}')]
    assert (result.rounds, result.cut) == (1, None)
    quoted = render_section("tool", RESULT_TITLE, ["不许刷屏"])
    assert model.seen[1][-1] == {"role": "tool", "tool_call_id": "c1", "content": quoted}


async def test_rounds_are_bounded_and_last_call_has_no_tools(tmp_path: Path) -> None:
    greedy = {"content": "", "tool_calls": [_call("c", "note_hints", {})]}
    model = ScriptedModel([greedy, greedy, {"content": "ok", "tool_calls": greedy["tool_calls"]}])
    ctx = ToolContext(chat="g1", notes=NoteStore(tmp_path))
    result = await run_with_tools(model, [], build_registry(), ctx, max_rounds=2)
    assert model.offered == [True, True, False]
    assert (result.text, result.rounds, result.cut) == ("ok", 2, "rounds")


async def test_time_limit_stops_offering_tools(tmp_path: Path) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 10.0
        return now[0]

    greedy = {"content": "", "tool_calls": [_call("c", "note_hints", {})]}
    model = ScriptedModel([greedy, {"content": "done"}])
    ctx = ToolContext(chat="g1", notes=NoteStore(tmp_path))
    result = await run_with_tools(model, [], build_registry(), ctx, time_limit=15.0, clock=clock)
    assert model.offered == [True, False]
    assert result.text == "done"


async def test_a_model_that_only_wants_tools_to_the_end_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """It ends with no answer; the path without tools says so in the log, and so does this one now."""
    greedy = {"content": "", "tool_calls": [_call("c", "note_hints", {})]}
    model = ScriptedModel([greedy, greedy])
    ctx = ToolContext(chat="g1", notes=NoteStore(tmp_path))
    with caplog.at_level(logging.WARNING):
        result = await run_with_tools(model, [], build_registry(), ctx, max_rounds=1)
    assert (result.text, result.cut) == ("", "rounds")
    assert "still asked for tools after 1 rounds (rounds limit) and gave no answer" in caplog.text
