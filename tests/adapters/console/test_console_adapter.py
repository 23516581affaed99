"""The console adapter's `/as NAME`: who the typed lines are recorded as."""

from __future__ import annotations

import io

from adapters.console import ConsoleAdapter
from memory.types import ChatMessage
from tests.conftest import T0

FAMILY = "👨\u200d👩\u200d👧\u200d👦"


async def test_as_refuses_the_bots_own_id_and_name_and_names_that_show_nothing() -> None:
    """`/as bot` made the typed lines the bot's own (sender id = `[bot] self_id`: recorded under the
    bot's person, beside its replies); `/as` with a zero-width space made a member with an invisible
    name, and a 300-character name was taken whole. Each is refused and the speaker stays."""
    output = io.StringIO()
    console = ConsoleAdapter("g1", "g1", "alice", "bot", "群忆", lambda: T0, output=output)
    received: list[ChatMessage] = []

    async def handle(message: object) -> None:
        assert isinstance(message, ChatMessage)
        received.append(message)

    console._handler = handle  # what start sets, without the stdin reader
    for typed in ("/as bot", "/as ＢＯＴ", "/as 群忆", "/as \u200b", "/as " + "长" * 300, "/as   "):
        await console.feed_line(typed)
    await console.feed_line("still alice")
    await console.feed_line(f"/as  小明{FAMILY} ")
    await console.feed_line("now 小明")
    assert [(m.sender_id, m.text) for m in received] == [
        ("alice", "still alice"),
        (f"小明{FAMILY}", "now 小明"),
    ]
    lines = output.getvalue().splitlines()
    assert lines[:3] == [
        "(still speaking as alice: bot is the bot itself; pick a member's name)",
        "(still speaking as alice: ＢＯＴ is the bot itself; pick a member's name)",
        "(still speaking as alice: 群忆 is the bot itself; pick a member's name)",
    ]
    assert lines[3].startswith(
        "(still speaking as alice: the name must not hold characters that show nothing"
    )
    assert lines[4].startswith("(still speaking as alice: the name is 300 characters, over the limit of 32")
    assert lines[5] == "(still speaking as alice: the name must not be blank)"
    assert lines[6] == f"(now speaking as 小明{FAMILY})"


async def test_a_line_of_control_characters_only_is_not_recorded() -> None:
    """It was recorded as an empty message; every adapter now passes such a message over."""
    console = ConsoleAdapter("g1", "g1", "alice", "bot", "群忆", lambda: T0, output=io.StringIO())
    received: list[ChatMessage] = []

    async def handle(message: object) -> None:
        assert isinstance(message, ChatMessage)
        received.append(message)

    console._handler = handle  # what start sets, without the stdin reader
    for typed in ("\x01\x02", "\x1b[2J", "\u200b\x07", "\x01好\x02"):
        await console.feed_line(typed)
    assert [m.text for m in received] == ["[2J", "好"]


async def test_a_line_not_in_the_terminals_encoding_is_refused_and_the_next_ones_read() -> None:
    """Found by the ninth QA pass: stdin read as text (strict UTF-8, as in a zh_CN.UTF-8 locale) raised
    on a line of GBK bytes, which ended the console's input, and the bot stopped; the lines before it
    in the same read were lost too. The console now reads bytes and refuses that line alone."""
    typed = "第一句\n".encode() + "你好\n".encode("gbk") + "第三句 @群忆\r\n/as 小明\r\n小明说\n".encode()
    source = io.TextIOWrapper(io.BytesIO(typed), encoding="utf-8", errors="strict")
    output = io.StringIO()
    console = ConsoleAdapter("g1", "g1", "alice", "bot", "群忆", lambda: T0, output=output, source=source)
    received: list[ChatMessage] = []

    async def handle(message: object) -> None:
        assert isinstance(message, ChatMessage)
        received.append(message)

    await console.start(handle)
    await console.finished.wait()  # the end of the input
    assert [(m.sender_id, m.text, m.to_bot) for m in received] == [
        ("alice", "第一句", False),
        ("alice", "第三句 @群忆", True),
        ("小明", "小明说", False),
    ]
    assert "(not sent: the line is not utf-8 text, at byte 0: b'\\xc4\\xe3\\xba\\xc3')" in output.getvalue()
