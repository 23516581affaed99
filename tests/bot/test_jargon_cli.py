"""`qunyi jargon …` against a real database in a temporary data directory."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from memory.service import MemoryService
from memory.storage import Database
from tests.bot.test_run_cli import python
from tests.memory.jargon.jargon_helpers import mine, record
from tests.memory.jargon.test_jargon_member_meanings import USES, explained_in_b

EXPORTED_KEYS = [
    "id",
    "chat_id",
    "content",
    "meaning",
    "is_jargon",
    "count",
    "last_inference_count",
    "status",
    "provenance",
    "decided_by",
    "decided_at",
    "created_at",
    "updated_at",
]
"""The keys of an entry in `list --json` before `shared_id` was added (README's contract)."""


def _seed(data_dir: Path) -> tuple[int, int]:
    async def go() -> tuple[int, int]:
        db = await Database.open(data_dir)
        try:
            memory = MemoryService(db)
            ids = await record(memory, 0, ["xswl 笑死", "真的xswl", "awsl"], chat="g1")
            chat = await memory.chat("test", "g1")
            assert chat is not None
            return await mine(memory, chat.id, "xswl", ids[:2]), await mine(memory, chat.id, "awsl", ids[2:])
        finally:
            await db.close()

    return asyncio.run(go())


def _cli(data_dir: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["jargon", *args, "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    return result.output


def test_review_cycle(tmp_path: Path) -> None:
    data = tmp_path / "data"
    xswl, awsl = _seed(data)
    listed = json.loads(_cli(data, "list", "--json", "--chat", "test:g1"))
    assert [(e["content"], e["count"]) for e in listed] == [("xswl", 2), ("awsl", 1)]
    assert [e["content"] for e in json.loads(_cli(data, "list", "--json", "--min-count", "2"))] == ["xswl"]
    _cli(data, "approve", str(xswl), "--meaning", "笑死我了", "--by", "alice")
    _cli(data, "reject", str(awsl), "--by", "bob")
    assert [e["content"] for e in json.loads(_cli(data, "list", "--json", "--status", "rejected"))] == [
        "awsl"
    ]
    shown = json.loads(_cli(data, "show", str(xswl), "--json"))
    assert shown["entry"]["meaning"] == "笑死我了" and shown["entry"]["decided_by"] == "alice"
    assert {m["text"] for e in shown["evidence"] for m in e["context"]} >= {"xswl 笑死", "真的xswl"}
    _cli(data, "edit", str(xswl), "--meaning", "笑死我了(夸张)", "--by", "alice")
    exported = _cli(data, "export", "-", "--format", "csv")
    assert "笑死我了(夸张)" in exported
    out = tmp_path / "dict.json"
    _cli(data, "export", str(out))
    assert _cli(data, "delete", str(xswl), str(awsl)) == "deleted 2\n"
    assert "created 2, updated 0, errors 0" in _cli(data, "import", str(out))
    back = {e["content"]: e for e in json.loads(_cli(data, "list", "--json"))}
    assert back["xswl"]["meaning"] == "笑死我了(夸张)" and back["awsl"]["status"] == "rejected"


def test_clear_errors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _seed(data)
    result = CliRunner().invoke(cli, ["jargon", "approve", "9999", "--data-dir", str(data)])
    assert result.exit_code != 0 and "no jargon entry with id 9999" in result.output
    bad = tmp_path / "bad.csv"
    bad.write_text("term,meaning\nx,y\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["jargon", "import", str(bad), "--data-dir", str(data)])
    assert result.exit_code != 0 and "'content' column" in result.output


def test_export_to_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _seed(data)
    target = tmp_path / "missing" / "j.json"
    result = CliRunner().invoke(cli, ["jargon", "export", str(target), "--data-dir", str(data)])
    assert result.exit_code == 1
    assert f"cannot write {target}: No such file or directory" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# `qunyi jargon export` where a file may grow to at most LIMIT bytes (as on a full disk: EFBIG)
FULL_DISK_EXPORT = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), int(sys.argv[3])))
from bot.cli.main import cli
cli(["jargon", "export", sys.argv[2], "--data-dir", sys.argv[1]])
"""


def test_an_export_that_cannot_be_written_whole_leaves_the_previous_export_as_it_was(tmp_path: Path) -> None:
    """Found by the fifth QA pass: `jargon export` wrote over the previous export in place, so a disk
    that filled up (or Ctrl-C) midway left a cut file where the good export had been."""
    data, rows = tmp_path / "data", tmp_path / "词 典.csv"
    rows.write_text(
        "content,meaning\n" + "".join(f"词{i},{'很长的含义' * 20}\n" for i in range(2000)), encoding="utf-8"
    )
    _cli(data, "import", str(rows))
    previous = tmp_path / "导出 dict.csv"
    previous.write_text("content,meaning\n上次,上次导出的\n", encoding="utf-8")
    previous.chmod(0o644)
    full = python("-c", FULL_DISK_EXPORT, str(data), str(previous), "200000")
    assert full.returncode == 1 and f"cannot write {previous}: File too large" in full.stderr, full.stderr
    assert previous.read_text(encoding="utf-8") == "content,meaning\n上次,上次导出的\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "导出 dict.csv", "词 典.csv"]
    _cli(data, "export", str(previous))
    assert previous.read_text(encoding="utf-8").count("很长的含义" * 20) == 2000
    assert previous.stat().st_mode & 0o777 == 0o644, "the export kept the file's permissions"


def test_the_entries_the_console_api_lists_import_as_entries(tmp_path: Path) -> None:
    """Found by the fifth QA pass: what `GET /api/jargon` answers, `{"entries": [...]}`, saved and
    imported, was read as the `{term: meaning}` form: one row, the term "entries", refused with
    "'meaning' must be text, not a list"."""
    data = tmp_path / "data"
    xswl, awsl = _seed(data)
    _cli(data, "approve", str(xswl), "--meaning", "笑死我了")
    listed = json.loads(_cli(data, "list", "--json"))  # each entry's to_json(), as the API's
    saved = tmp_path / "api 答复.json"
    saved.write_text(json.dumps({"entries": listed}, ensure_ascii=False), encoding="utf-8")
    _cli(data, "delete", str(xswl), str(awsl))
    assert "created 2, updated 0, errors 0" in _cli(data, "import", str(saved), "--chat", "test:g1")
    back = {e["content"]: (e["meaning"], e["status"]) for e in json.loads(_cli(data, "list", "--json"))}
    assert back == {"xswl": ("笑死我了", "approved"), "awsl": ("", "candidate")}


def test_import_reports_a_row_too_big_or_an_unclosed_quote_and_loads_the_others(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rows = ["content,meaning", "开炉,吃火锅", "巨," + "长" * 140_000, '"团建,公司聚餐', "摸鱼,上班偷懒"]
    path = tmp_path / "dict.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["jargon", "import", str(path), "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert "created 2, updated 0, errors 2" in result.output
    assert "row 2: the row on line 3 cannot be read: field larger than field limit" in result.output
    assert "row 3: the quote opened in the row on line 4 is never closed" in result.output
    listed = json.loads(_cli(data, "list", "--json"))
    assert {e["content"]: e["meaning"] for e in listed} == {"开炉": "吃火锅", "摸鱼": "上班偷懒"}


def test_list_pages_with_limit_and_offset_as_the_console_does(tmp_path: Path) -> None:
    """`jargon list` had `--limit` but no `--offset`: past the first page no entry could be listed."""
    data = tmp_path / "data"
    xswl, awsl = _seed(data)
    first = json.loads(_cli(data, "list", "--limit", "1", "--json"))
    second = json.loads(_cli(data, "list", "--limit", "1", "--offset", "1", "--json"))
    assert [e["id"] for e in first] == [xswl] and [e["id"] for e in second] == [awsl]
    assert "awsl" in _cli(data, "list", "--limit", "1", "--offset", "1")
    assert _cli(data, "list", "--offset", "2").strip() == "no entries past the first 2"
    negative = CliRunner().invoke(cli, ["jargon", "list", "--offset", "-1", "--data-dir", str(data)])
    assert negative.exit_code == 2 and "is not in the range" in negative.output


def test_show_prints_the_review_trail_with_readable_times(tmp_path: Path) -> None:
    data = tmp_path / "data"
    xswl, _ = _seed(data)
    _cli(data, "approve", str(xswl), "--meaning", "笑死我了", "--by", "alice")
    shown = _cli(data, "show", str(xswl))
    trail = json.loads(_cli(data, "show", str(xswl), "--json"))["reviews"]
    at = time.strftime("%Y-%m-%d %H:%M", time.localtime(trail[0]["time"]))
    assert f"[approve by alice at {at}]" in shown


def test_export_then_import_keeps_each_chats_own_entries_in_that_chat(tmp_path: Path) -> None:
    """An export of the whole dictionary holds chats' own entries (their chat_id). Imported back, they
    went into the global dictionary: g1's private meaning of 老地方 was then explained in every chat,
    and g2's entry of the same term was overwritten by it."""
    data = tmp_path / "data"
    _seed(data)

    async def second_chat() -> None:
        db = await Database.open(data)
        try:
            await record(MemoryService(db), 10, ["随便聊聊"], chat="g2")
        finally:
            await db.close()

    asyncio.run(second_chat())
    for chat, meaning in (("test:g1", "海底捞"), ("test:g2", "308会议室")):
        own = tmp_path / f"{chat[-2:]}.csv"
        own.write_text(f"content,meaning\n老地方,{meaning}\n", encoding="utf-8")
        _cli(data, "import", str(own), "--chat", chat)
    for fmt in ("csv", "json"):
        exported = tmp_path / f"all.{fmt}"
        _cli(data, "export", str(exported))
        result = CliRunner().invoke(cli, ["jargon", "import", str(exported), "--data-dir", str(data)])
        assert result.exit_code == 0, result.output
        assert "created 0, updated 2, errors 2" in result.output
        assert "own dictionary, not of the global dictionary" in result.output
    g2_only = tmp_path / "g2_only.json"
    rows = json.loads((tmp_path / "all.json").read_text(encoding="utf-8"))
    g2_only.write_text(json.dumps([r for r in rows if r["chat_id"] is not None]), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["jargon", "import", str(g2_only), "--chat", "test:g2", "--data-dir", str(data)]
    )
    assert "created 0, updated 1, errors 1" in result.output
    assert "an entry of chat 1's own dictionary, not of chat 2" in result.output
    entries = json.loads(_cli(data, "list", "--json", "--search", "老地方"))
    assert sorted((e["chat_id"], e["meaning"]) for e in entries) == [(1, "海底捞"), (2, "308会议室")]


def test_text_output_names_chats_by_their_keys(tmp_path: Path) -> None:
    data = tmp_path / "data"

    async def seed() -> int:
        db = await Database.open(data)
        try:
            memory = MemoryService(db)
            ids = await record(memory, 0, ["yyds 绝了", "真的yyds"], chat="g7")
            chat = await memory.chat("test", "g7")
            assert chat is not None
            return await mine(memory, chat.id, "yyds", ids, scope="chat")
        finally:
            await db.close()

    entry = asyncio.run(seed())
    shown = _cli(data, "show", str(entry))
    assert "counts per chat: test:g7: 2" in shown and "(test:g7)" in shown
    assert "(chat " not in shown
    assert "(test:g7)" in _cli(data, "list")
    assert "(test:g7)" in _cli(data, "approve", str(entry), "--meaning", "永远的神", "--by", "alice")
    assert "(test:g7)" in _cli(data, "edit", str(entry), "--meaning", "永远的神!", "--by", "alice")


@pytest.mark.parametrize(
    "args",
    [
        ["jargon", "show", "99999999999999999999999"],
        ["jargon", "approve", "1", "99999999999999999999999"],
        ["jargon", "edit", "99999999999999999999999", "--meaning", "x"],
        ["jargon", "delete", "99999999999999999999999"],
        ["jargon", "list", "--min-count", "99999999999999999999999"],
        ["jargon", "list", "--limit", "99999999999999999999999"],
        ["jargon", "list", "--offset", "99999999999999999999999"],
    ],
    ids=lambda args: " ".join(args[:2]) + (" " + args[2] if args[2].startswith("--") else ""),
)
def test_a_number_too_large_for_the_database_is_a_usage_error(args: list[str], tmp_path: Path) -> None:
    """SQLite stores integers up to 2**63 - 1; a larger id, count or limit failed the query with an
    OverflowError traceback (found by the QA pass)."""
    data = tmp_path / "d"
    _seed(data)
    result = CliRunner().invoke(cli, [*args, "--data-dir", str(data)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert "is not in the range" in result.output


def test_an_import_row_whose_chat_id_is_no_number_the_database_holds_is_a_row_error(tmp_path: Path) -> None:
    """A chat_id of "²" (a digit to str.isdigit, not to int) failed the whole import with a ValueError
    traceback (found by the QA pass); it and one past SQLite's integers are now errors of their row."""
    data = tmp_path / "data"
    path = tmp_path / "dict.csv"
    path.write_text("content,meaning,chat_id\n开炉,吃火锅,²\n团建,聚餐,99999999999999999999999\n摸鱼,偷懒,\n")
    result = CliRunner().invoke(cli, ["jargon", "import", str(path), "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert "created 1, updated 0, errors 2" in result.output
    assert "row 1: chat_id must be a chat's id or empty, not '²'" in result.output
    assert "row 2: chat_id must be a chat's id or empty, not '99999999999999999999999'" in result.output
    assert [e["content"] for e in json.loads(_cli(data, "list", "--json"))] == ["摸鱼"]


def test_import_reads_a_gb18030_csv_as_excel_saves_it_on_chinese_windows(tmp_path: Path) -> None:
    """A CSV in GB18030 (Excel's default on Chinese Windows) was refused with Python's codec message."""
    data = tmp_path / "data"
    path = tmp_path / "dict.csv"
    path.write_bytes("content,meaning\n开炉,吃火锅\n摸鱼,上班偷懒\n".encode("gb18030"))
    assert "created 2, updated 0, errors 0" in _cli(data, "import", str(path))
    listed = json.loads(_cli(data, "list", "--json"))
    assert {e["content"]: e["meaning"] for e in listed} == {"开炉": "吃火锅", "摸鱼": "上班偷懒"}


def test_import_of_a_file_in_no_encoding_it_reads_says_to_save_it_as_utf8(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = tmp_path / "dict.csv"
    path.write_bytes(b"content,meaning\n\xff\xfa,x\n")
    result = CliRunner().invoke(cli, ["jargon", "import", str(path), "--data-dir", str(data)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "save it as UTF-8" in lines[0], result.output
    assert "codec" not in result.output


def test_import_reads_a_json_file_saved_with_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = tmp_path / "dict.json"
    path.write_text(json.dumps({"开炉": "吃火锅"}, ensure_ascii=False), encoding="utf-8-sig")
    assert "created 1, updated 0, errors 0" in _cli(data, "import", str(path))


def test_show_of_an_entry_counted_in_no_chat_says_none(tmp_path: Path) -> None:
    """An imported entry, seen in no chat yet, showed "counts per chat: " with nothing after it."""
    data = tmp_path / "data"
    path = tmp_path / "dict.csv"
    path.write_text("content,meaning\n开炉,吃火锅\n", encoding="utf-8")
    _cli(data, "import", str(path))
    (entry,) = json.loads(_cli(data, "list", "--json"))
    assert "counts per chat: none\n" in _cli(data, "show", str(entry["id"]))


def test_show_lists_the_counts_per_chat(tmp_path: Path) -> None:
    data = tmp_path / "data"
    xswl, _ = _seed(data)
    assert "counts per chat: test:g1: 2\n" in _cli(data, "show", str(xswl))


def test_show_keeps_an_evidence_messages_line_breaks_inside_its_line(tmp_path: Path) -> None:
    """Found by the ninth QA pass: an evidence message holding a line break printed a line of its own,
    which could pass for another message of the context ("» 群主: …")."""
    data = tmp_path / "data"

    async def seed() -> int:
        db = await Database.open(data)
        try:
            memory = MemoryService(db)
            ids = await record(memory, 0, ["真的xswl\n» 群主: xswl 是管理员专用词"], chat="g1")
            chat = await memory.chat("test", "g1")
            assert chat is not None
            return await mine(memory, chat.id, "xswl", ids)
        finally:
            await db.close()

    shown = _cli(data, "show", str(asyncio.run(seed())))
    assert ": 真的xswl\n  » 群主: xswl 是管理员专用词\n" in shown
    assert sum(line.startswith("»") for line in shown.splitlines()) == 1


def test_a_term_loses_the_characters_that_show_nothing_as_names_do(tmp_path: Path) -> None:
    """Found by the ninth QA pass: an imported term kept them, so 绝<ZWSP>绝子 was an entry that looked
    like 绝绝子 and never matched it, a zero-width space alone a term that showed as blank, and an RTL
    override turned the rest of its `jargon list` line around."""
    data = tmp_path / "data"
    _seed(data)  # chat test:g1, with xswl and awsl
    path = tmp_path / "dict.json"
    terms = {"\u200b": "零宽", "绝\u200b绝子": "好", "\u202eabc": "反转", "yy\u00adds": "永远的神"}
    path.write_text(json.dumps(terms), encoding="utf-8")
    result = CliRunner().invoke(cli, ["jargon", "import", str(path), "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert "created 3, updated 0, errors 1" in result.output and "a term cannot be empty" in result.output
    listed = {e["content"]: e["meaning"] for e in json.loads(_cli(data, "list", "--json"))}
    assert listed == {"绝绝子": "好", "abc": "反转", "yyds": "永远的神", "xswl": "", "awsl": ""}
    asked = CliRunner().invoke(cli, ["what", "绝\u200b绝子", "--chat", "test:g1", "--data-dir", str(data)])
    assert "好" in asked.output, asked.output


def test_a_members_meaning_is_listed_with_its_chats_count_beside_the_shared_entry(tmp_path: Path) -> None:
    """Under the global scope the entry holding a member's meaning listed as `×0`; it now shows how
    often its chat used the term and names the shared entry, in text and JSON (the keys as before,
    and `shared_id`)."""
    data = tmp_path / "data"

    async def seed() -> tuple[int, int, int, int]:
        db = await Database.open(data)
        try:
            return await explained_in_b(MemoryService(db))
        finally:
            await db.close()

    _a, _b, shared, own = asyncio.run(seed())
    in_b = len(USES) + 1  # B's uses and its explanation; A said it len(USES) times
    lines = {line.split()[0]: line for line in _cli(data, "list").splitlines()}
    assert f"×{in_b + len(USES)}  [candidate/mined/?] (global)" in lines[str(shared)]
    assert f"×{in_b}  [inferred/member/?] (test:B, beside global {shared})  去吃火锅" in lines[str(own)]
    listed = {e["id"]: e for e in json.loads(_cli(data, "list", "--json"))}
    assert (listed[own]["count"], listed[own]["shared_id"], listed[shared]["shared_id"]) == (
        in_b,
        shared,
        None,
    )
    assert list(listed[own]) == [*EXPORTED_KEYS, "shared_id"]
    shown = _cli(data, "show", str(own))
    assert f"own entry of test:B, beside global entry {shared}" in shown and f"test:B: {in_b}" in shown
