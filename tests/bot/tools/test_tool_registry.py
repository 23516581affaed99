"""The tool registry: definitions, argument validation, scoping, read-only, time limit."""

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.tools import Tool, ToolContext, ToolRegistry, build_registry
from memory.notes import NoteStore

ALL_TOOLS = ["recall", "person", "jargon", "note_get", "note_set", "note_rename", "note_hints"]


class FakeMemory:
    """A MemoryTools for tests: records calls and answers from a small table."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    async def recall(self, chat: str, query: str, limit: int) -> str:
        self.calls.append(("recall", chat, query, str(limit)))
        return f"{chat}: {query} x{limit}"

    async def person(self, chat: str, name: str) -> str:
        self.calls.append(("person", chat, name))
        return "小红 (红红): 喜欢猫" if name in ("小红", "红红") else ""

    async def jargon(self, chat: str, term: str) -> str:
        self.calls.append(("jargon", chat, term))
        return f"{term} = 很厉害"


@pytest.fixture
def memory() -> FakeMemory:
    return FakeMemory()


@pytest.fixture
def ctx(tmp_path: Path, memory: FakeMemory) -> ToolContext:
    return ToolContext(chat="g1", notes=NoteStore(tmp_path / "g1"), memory=memory, writable=True)


def test_definitions_are_compact_openai_functions() -> None:
    defs = build_registry().openai_tools()
    assert [d["function"]["name"] for d in defs] == ALL_TOOLS
    text = json.dumps(defs)
    assert '"title"' not in text and "maxLength" not in text
    get = next(d["function"] for d in defs if d["function"]["name"] == "note_get")
    assert get["parameters"]["required"] == ["name"]
    depth = get["parameters"]["properties"]["depth"]
    assert depth == {"default": 0, "maximum": 3, "minimum": 0, "type": "integer"}
    read_only = [d["function"]["name"] for d in build_registry().openai_tools(writable=False)]
    assert read_only == ["recall", "person", "jargon", "note_get", "note_hints"]


async def test_memory_tools_are_scoped_to_the_chat(ctx: ToolContext, memory: FakeMemory) -> None:
    registry = build_registry()
    assert await registry.call("recall", '{"query": "火锅"}', ctx) == "g1: 火锅 x5"
    assert await registry.call("recall", '"{\\"query\\": \\"火锅\\"}"', ctx) == "g1: 火锅 x5"  # encoded twice
    assert await registry.call("person", {"name": "红红"}, ctx) == "小红 (红红): 喜欢猫"
    assert await registry.call("person", {"name": "无名"}, ctx) == "(nothing found)"
    assert await registry.call("jargon", {"term": "yyds"}, ctx) == "yyds = 很厉害"
    assert [c[1] for c in memory.calls] == ["g1"] * 5


async def test_note_tools_round_trip(ctx: ToolContext) -> None:
    registry = build_registry()
    assert await registry.call("note_get", {"name": "规则"}, ctx) == "(no note named 规则 yet)"
    assert await registry.call("note_set", {"name": "规则", "content": "见 ![[群主]]"}, ctx) == "created 规则"
    assert await registry.call("note_set", {"name": "群主", "content": "小明"}, ctx) == "created 群主"
    assert await registry.call("note_get", {"name": "规则", "depth": 1}, ctx) == (
        "见 ![[群主]]start\n\n小明\n\n![[群主]]end"
    )
    assert await registry.call("note_rename", {"old": "群主", "new": "管理"}, ctx) == (
        "群主 renamed to 管理; links updated in 1 notes"
    )
    assert await ctx.notes.get("规则") == "见 ![[管理]]"
    # both weigh 1 (one link to a leaf; a leaf), so the tie goes by name
    assert await registry.call("note_hints", {"n": 2}, ctx) == "管理\n规则"


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("note_get", "{not json", "error: arguments for note_get are not a JSON object"),
        ("note_get", "[1, 2]", "error: arguments for note_get are not a JSON object"),
        ("note_get", json.dumps("[1, 2]"), "error: arguments for note_get are not a JSON object"),
        ("note_get", json.dumps("规则"), "error: arguments for note_get are not a JSON object"),
        ("note_get", json.dumps(json.dumps('{"name": "x"}')), "error: arguments for note_get are not a JSON"),
        ("note_get", {}, "error: bad arguments for note_get: name: Field required"),
        ("note_get", {"name": "x", "depth": 9}, "error: bad arguments for note_get: depth:"),
        ("note_get", {"name": "../../etc/passwd"}, "error: invalid note name"),
        ("note_set", {"name": "a/b", "content": "x"}, "error: invalid note name"),
        ("note_hints", {"n": "many"}, "error: bad arguments for note_hints: n:"),
        ("note_rename", {"old": "nope", "new": "x"}, "error: no note named 'nope'"),
        ("shell", {}, "error: unknown tool 'shell'"),
    ],
)
async def test_bad_calls_come_back_as_error_text(
    ctx: ToolContext, name: str, args: object, expected: str
) -> None:
    outcome = await build_registry().call_checked(name, args, ctx)  # type: ignore[arg-type]
    assert outcome.ok is False
    assert outcome.text.startswith(expected)
    assert await ctx.notes.list() == []


async def test_read_only_context_refuses_writes(tmp_path: Path) -> None:
    ctx = ToolContext(chat="g1", notes=NoteStore(tmp_path), writable=False)
    text = await build_registry().call("note_set", {"name": "a", "content": "b"}, ctx)
    assert text == "error: note_set is not allowed here (read-only)"
    assert await ctx.notes.list() == []
    assert await build_registry().call("recall", {"query": "q"}, ctx) == (
        "error: memory look-ups are not available here"
    )


async def test_unknown_tool_error_names_only_the_tools_offered(tmp_path: Path) -> None:
    """A read-only context neither lists nor suggests the write tools."""
    ctx = ToolContext(chat="g1", notes=NoteStore(tmp_path), writable=False)
    text = await build_registry().call("note_write", {}, ctx)
    assert text == "error: unknown tool 'note_write'; tools: recall, person, jargon, note_get, note_hints"


class _Args(BaseModel):
    pass


async def test_time_limit_and_handler_failures(ctx: ToolContext) -> None:
    async def slow(_ctx: ToolContext, _args: _Args) -> str:
        await asyncio.sleep(5)
        return "late"

    async def broken(_ctx: ToolContext, _args: _Args) -> str:
        raise RuntimeError("secret internals")

    async def chatty(_ctx: ToolContext, _args: _Args) -> str:
        return "字" * 10_000

    registry = ToolRegistry(
        [
            Tool("slow", "s", _Args, slow),
            Tool("broken", "b", _Args, broken),
            Tool("chatty", "c", _Args, chatty),
        ],
        time_limit=0.05,
    )
    assert await registry.call("slow", None, ctx) == "error: slow took longer than 0.05s"
    assert await registry.call("broken", "{}", ctx) == "error: broken failed"
    long = await registry.call("chatty", "{}", ctx)
    assert len(long) == 4000 and long.endswith("…")
    with pytest.raises(ValueError):
        registry.add(Tool("slow", "dup", _Args, slow))


async def test_a_long_note_is_read_in_pages_that_put_it_back_together(ctx: ToolContext) -> None:
    registry = build_registry()
    long_note = "".join(f"第{i}条：周六爬山👍🏽，记得带水。\n" for i in range(700))
    assert len(long_note) > 10_000
    await ctx.notes.set("长笔记", long_note)
    pages, offset = [], 0
    while True:
        answer = await registry.call("note_get", {"name": "长笔记", "offset": offset}, ctx)
        assert len(answer) <= 4000
        page, _, more = answer.rpartition("\n[characters ")
        if not more.endswith("]") or "read on with offset=" not in more:
            pages.append(answer)
            break
        pages.append(page)
        offset = int(more.rsplit("offset=", 1)[1].rstrip("]"))
    assert len(pages) >= 3 and "".join(pages) == long_note, "the pages hold the whole note, nothing cut"
    assert "only" in await registry.call("note_get", {"name": "长笔记", "offset": 10**6}, ctx)


async def test_a_page_asked_for_inside_a_grapheme_starts_with_the_whole_of_it(ctx: ToolContext) -> None:
    """A model-chosen offset inside an emoji sequence began the page with a bare modifier or joiner."""
    registry = build_registry()
    family = "👨\u200d👩\u200d👧"
    long_note = "".join(f"第{i}条：{family}周六爬山👍🏽。\n" for i in range(700))
    await ctx.notes.set("长笔记", long_note)
    inside = long_note.index(family) + 2  # after the man and the joiner
    answer = await registry.call("note_get", {"name": "长笔记", "offset": inside}, ctx)
    assert answer.startswith(family + "周六爬山👍🏽"), answer[:20]
    start = long_note.index(family)
    assert f"[characters {start}–" in answer
    thumb = long_note.index("🏽")
    skin = await registry.call("note_get", {"name": "长笔记", "offset": thumb}, ctx)
    assert skin.startswith("👍🏽。"), skin[:10]


async def test_a_note_changed_by_someone_else_since_the_model_read_it_is_not_replaced(
    tmp_path: Path, ctx: ToolContext
) -> None:
    """An admin's edit made while the model was thinking (between its note_get and its note_set) was
    silently replaced by the model's text, made from the older note. The model's write is now refused,
    nothing saved; once it reads the note again its write goes through."""
    registry = build_registry()
    admin = NoteStore(tmp_path / "g1")  # another process: the CLI, the web console
    await admin.set("群规", "规则一：周六爬山")
    assert await registry.call("note_get", {"name": "群规"}, ctx) == "规则一：周六爬山"
    await admin.set("群规", "规则一：周日爬山（管理员改）")
    older = {"name": " 群规", "content": "规则一：周六爬山\n规则二：带水"}  # the name as the model spells it
    stale = await registry.call("note_set", older, ctx)
    assert stale.startswith("error: note '群规' was changed since") and "read it again with note_get" in stale
    assert await admin.get("群规") == "规则一：周日爬山（管理员改）"
    assert await registry.call("note_get", {"name": "群规"}, ctx) == "规则一：周日爬山（管理员改）"
    mended = {"name": "群规", "content": "规则一：周日爬山（管理员改）\n规则二：带水"}
    assert await registry.call("note_set", mended, ctx) == "updated 群规"
    again = {"name": "群规", "content": "\ufeff规则一：周日爬山（管理员改）\r\n规则二：带水\r\n规则三：守时"}
    assert await registry.call("note_set", again, ctx) == "updated 群规", "its own write is what it last saw"
    # A note the model found missing is not written over one created meanwhile.
    assert await registry.call("note_get", {"name": "名单"}, ctx) == "(no note named 名单 yet)"
    await admin.set("名单", "小红、小明")
    assert "was changed since" in await registry.call("note_set", {"name": "名单", "content": "小刚"}, ctx)
    assert await admin.get("名单") == "小红、小明"
    # A note the model never read is written as before.
    await admin.set("备忘", "旧")
    assert await registry.call("note_set", {"name": "备忘", "content": "新"}, ctx) == "updated 备忘"
