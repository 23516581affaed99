"""`qunyi chats list|merge` against a real database."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from bot.cli.main import cli
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage, MessageDeletion
from tests.conftest import T0, make_message


async def _fill(data_dir: Path) -> None:
    db = await Database.open(data_dir)
    memory = MemoryService(db)
    chats = [("telegram", "-4455", 3), ("telegram", "-1004455", 1), ("qq", "-4455", 1), ("replay", "g1", 1)]
    for platform, chat, count in chats:
        await memory.record_many(
            ChatMessage(
                platform=platform,
                chat_id=chat,
                chat_name=f"群 {chat}",
                message_id=str(n),
                sender_id="u1",
                sender_name="Lily",
                text=f"周六爬山 {n}",
                time=T0 + timedelta(minutes=n),
            )
            for n in range(1, count + 1)
        )
    await db.close()


def _data(tmp_path: Path) -> list[str]:
    asyncio.run(_fill(tmp_path / "d"))
    return ["--data-dir", str(tmp_path / "d")]


def _listed(data: list[str]) -> dict[str, int]:
    result = CliRunner().invoke(cli, ["chats", "list", "--json", *data])
    assert result.exit_code == 0, result.output
    return {c["key"]: c["messages"] for c in json.loads(result.output)}


def test_list_shows_every_chat_with_its_key(tmp_path: Path) -> None:
    data = _data(tmp_path)
    result = CliRunner().invoke(cli, ["chats", "list", *data])
    assert result.exit_code == 0, result.output
    assert "telegram:-4455\t#1\t群 -4455\t3 messages" in result.output
    assert _listed(data) == {"telegram:-4455": 3, "telegram:-1004455": 1, "qq:-4455": 1, "replay:g1": 1}


def test_a_dry_run_prints_what_would_move_and_the_merge_then_moves_it(tmp_path: Path) -> None:
    data = _data(tmp_path)
    merge = ["chats", "merge", "telegram:-4455", "telegram:-1004455", *data]
    before = _listed(data)
    result = CliRunner().invoke(cli, [*merge, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("would merge telegram:-4455 into telegram:-1004455: 3 messages")
    assert _listed(data) == before
    result = CliRunner().invoke(cli, merge)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("merged telegram:-4455 into telegram:-1004455: 3 messages")
    assert len(result.output.strip().splitlines()) == 1
    assert _listed(data) == {"telegram:-1004455": 4, "qq:-4455": 1, "replay:g1": 1}
    again = CliRunner().invoke(cli, merge)
    assert again.exit_code == 2, "a re-run is an error"
    assert "FROM: telegram:-4455 was already merged into telegram:-1004455" in again.output


def test_a_merged_away_key_names_the_chat_it_went_into(tmp_path: Path) -> None:
    data = _data(tmp_path)
    merged = CliRunner().invoke(cli, ["chats", "merge", "telegram:-4455", "telegram:-1004455", *data])
    assert merged.exit_code == 0, merged.output
    result = CliRunner().invoke(cli, ["recall", "--chat", "telegram:-4455", "--json", "爬山", *data])
    assert result.exit_code == 0, result.output
    assert "note: telegram:-4455 was merged into telegram:-1004455; using that" in result.output
    found = json.loads(result.output[result.output.index("{") :])
    assert found["chat_id"] == 2, "the chat telegram:-1004455 is"
    jargon = CliRunner().invoke(cli, ["jargon", "list", "--chat", "telegram:-4455", *data])
    assert jargon.exit_code == 0, jargon.output
    assert "note: telegram:-4455 was merged into telegram:-1004455; using that" in jargon.output
    texts = {hit["text"] for hit in found["results"]}
    assert texts == {"周六爬山 1", "周六爬山 2", "周六爬山 3"}, "the old group's messages, now in the new one"


def test_the_merged_chat_is_listed_with_the_one_it_went_into_and_its_import_lands_there(
    tmp_path: Path,
) -> None:
    data = _data(tmp_path)
    merged = CliRunner().invoke(cli, ["chats", "merge", "telegram:-4455", "telegram:-1004455", *data])
    assert merged.exit_code == 0, merged.output
    export = tmp_path / "old.jsonl"  # the old group's export, taken before the upgrade
    with export.open("w", encoding="utf-8") as out:
        for n, text in ((1, "周六爬山 1"), (2, "周六爬山 2"), (4, "周日也去")):
            when = (T0 + timedelta(minutes=n)).isoformat()
            line = {"chat": "-4455", "message_id": str(n), "sender_id": "u1", "sender_name": "Lily"}
            out.write(json.dumps(line | {"time": when, "text": text}, ensure_ascii=False) + "\n")
    args = ["import", "replay", str(export), "--platform", "telegram", "--catch-up-rounds", "0"]
    result = CliRunner().invoke(cli, [*args, "--no-progress", *data])
    assert result.exit_code == 0, result.output
    assert "1 messages imported, 2 already known" in result.output
    assert _listed(data) == {"telegram:-1004455": 5, "qq:-4455": 1, "replay:g1": 1}
    listed = CliRunner().invoke(cli, ["chats", "list", "--json", *data])
    redirects = {c["key"]: c["merged_from"] for c in json.loads(listed.output)}
    assert redirects == {"telegram:-1004455": ["telegram:-4455"], "qq:-4455": [], "replay:g1": []}
    text = CliRunner().invoke(cli, ["chats", "list", *data]).output
    assert "jargon terms\tmerged from telegram:-4455" in text


def test_bad_keys_are_usage_errors_and_change_nothing(tmp_path: Path) -> None:
    data = _data(tmp_path)
    before = _listed(data)
    cases = [
        (["nowhere:1", "replay:g1"], "FROM: no chat 'nowhere:1'"),
        (["-4455", "replay:g1"], "'-4455' names several chats"),
        (["replay:g1", "replay:g1"], "FROM and INTO are the same chat (replay:g1)"),
        (["qq:-4455", "replay:g1"], "different platforms; pass --any-platform"),
    ]
    for keys, message in cases:
        result = CliRunner().invoke(cli, ["chats", "merge", *data, "--", *keys])  # `--`: a key may be -4455
        assert result.exit_code == 2 and message in result.output, result.output
    assert _listed(data) == before
    result = CliRunner().invoke(cli, ["chats", "merge", "qq:-4455", "replay:g1", "--any-platform", *data])
    assert result.exit_code == 0, result.output
    assert _listed(data) == {"telegram:-4455": 3, "telegram:-1004455": 1, "replay:g1": 2}


def test_a_merged_chat_left_in_disabled_chats_is_pointed_out(tmp_path: Path) -> None:
    data = _data(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text('[reply]\ndisabled_chats = ["-4455"]\n', encoding="utf-8")
    merge = ["chats", "merge", "telegram:-4455", "telegram:-1004455", "--config", str(config), *data]
    result = CliRunner().invoke(cli, merge)
    assert result.exit_code == 0, result.output
    assert "add '-1004455' there" in result.output
    assert config.read_text(encoding="utf-8") == '[reply]\ndisabled_chats = ["-4455"]\n'


def test_a_merged_chat_kept_out_of_global_recall_is_pointed_out(tmp_path: Path) -> None:
    """The merged chat's memory follows the settings of the chat it went into: a group kept out of
    global recall whose memory went into a chat that is not would be recalled in every other chat."""
    data = _data(tmp_path)
    config = tmp_path / "config.toml"
    text = '[recall]\nscope = "global"\nglobal_blacklist = ["telegram:-4455"]\n'
    config.write_text(text, encoding="utf-8")
    merge = ["chats", "merge", "telegram:-4455", "telegram:-1004455", "--config", str(config), *data]
    result = CliRunner().invoke(cli, [*merge, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "telegram:-4455 is in [recall] global_blacklist, telegram:-1004455 is not" in result.output
    result = CliRunner().invoke(cli, merge)
    assert result.exit_code == 0, result.output
    assert "add '-1004455' there to keep what was remembered of telegram:-4455" in result.output
    assert "disabled_chats" not in result.output
    assert config.read_text(encoding="utf-8") == text


def test_a_chat_made_only_to_keep_a_deletion_is_listed_as_holding_no_messages_only_the_mark(
    tmp_path: Path,
) -> None:
    """A deletion in a chat never recorded makes the chat (to keep the deletion out of a later import):
    `chats list` showed it as a chat like the others, with nothing saying why it was there."""
    data = _data(tmp_path)

    async def delete_before_anything_arrived(chat: str) -> None:
        db = await Database.open(tmp_path / "d")
        await MemoryService(db).delete(MessageDeletion("replay", chat, "m1"))
        await db.close()

    asyncio.run(delete_before_anything_arrived("g9"))
    asyncio.run(delete_before_anything_arrived("g1"))  # a chat with messages: no note
    result = CliRunner().invoke(cli, ["chats", "list", *data])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("replay:g9\t")]
    assert "\t0 messages\t" in line
    assert line.endswith(
        "\tno messages, only 1 deletion mark (deletions seen before anything of the chat was recorded, "
        "kept so that a later import leaves those messages out)"
    )
    assert result.output.count("deletion mark") == 1, "only the chat that holds nothing else says so"
    listed = json.loads(CliRunner().invoke(cli, ["chats", "list", "--json", *data]).output)
    marks = {c["key"]: (c["messages"], c["deletion_marks"]) for c in listed}
    assert marks["replay:g9"] == (0, 1) and marks["replay:g1"] == (1, 1) and marks["qq:-4455"] == (1, 0)


def test_a_chat_name_holding_line_breaks_and_tabs_is_listed_on_its_own_line(tmp_path: Path) -> None:
    """Found by the ninth QA pass: a chat name keeps the line breaks and tabs it was given (a replay
    log's chat_name), and `chats list` printed them, so such a name forged a line of its own."""

    async def fill() -> None:
        db = await Database.open(tmp_path / "d")
        await MemoryService(db).record(make_message(1, chat_name="周末群\ntest:g9\t#2\t假群"))
        await db.close()

    asyncio.run(fill())
    result = CliRunner().invoke(cli, ["chats", "list", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    columns = ["test:g1", "#1", "周末群 test:g9 #2 假群", "1 messages", "1 members", "0 topics"]
    assert result.output == "\t".join([*columns, "0 jargon terms\n"])
