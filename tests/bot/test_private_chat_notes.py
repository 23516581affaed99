"""Notes follow the QQ private chats migration 0009 renamed (qq:N → qq:private-N)."""

from pathlib import Path

from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.notes import NoteScopes
from memory.storage.database import DB_FILENAME
from memory.types import ChatKind
from tests.conftest import T0, make_message
from tests.memory.storage.test_migrations import schema_at


def data_dir_before_0009(tmp_path: Path, chats: list[tuple[str, str]]) -> Path:
    """A data folder whose database is at 0008 and holds QQ chats (platform id, kind)."""
    data = tmp_path / "data"
    data.mkdir()
    with schema_at(data / DB_FILENAME, "0008_id_floors") as connection:
        for chat_id, (ident, kind) in enumerate(chats, start=1):
            connection.exec_driver_sql(
                "INSERT INTO chats(id, platform, platform_chat_id, kind, name, created_at) "
                f"VALUES ({chat_id}, 'qq', '{ident}', '{kind}', '', 0)"
            )
    return data


async def test_a_renamed_private_chat_keeps_its_notes_and_a_group_keeps_its_own(tmp_path: Path) -> None:
    data = data_dir_before_0009(tmp_path, [("30003", "private"), ("40004", "group")])
    old = NoteScopes(data / "notes")
    await old.for_chat("qq:30003").set("暗号", "私聊里说的暗号")
    await old.for_chat("qq:40004").set("群规", "不许刷屏")

    app = await build_app(ConfigStore(Settings(), None), data, ManualClock(T0), watch_config=False)
    try:
        notes = app.memory.notes
        assert notes is not None
        assert await notes.for_chat("qq:private-30003").get("暗号") == "私聊里说的暗号"
        assert await notes.for_chat("qq:30003").list() == [], "a later group 30003 reads none of it"
        assert await notes.for_chat("qq:40004").get("群规") == "不许刷屏"
    finally:
        await app.close()


async def test_notes_stay_where_the_bare_key_is_a_chat_again(tmp_path: Path) -> None:
    data = data_dir_before_0009(tmp_path, [("private-60006", "private"), ("60006", "group")])
    await NoteScopes(data / "notes").for_chat("qq:60006").set("群规", "不许刷屏")
    app = await build_app(ConfigStore(Settings(), None), data, ManualClock(T0), watch_config=False)
    try:
        assert app.memory.notes is not None
        assert await app.memory.notes.for_chat("qq:60006").get("群规") == "不许刷屏"
        assert await app.memory.notes.for_chat("qq:private-60006").list() == []
    finally:
        await app.close()


async def test_a_private_chat_is_not_given_the_folder_of_a_group_merged_away(tmp_path: Path) -> None:
    """Group qq:5 merged into group qq:7 leaves qq:5's folder naming qq:7's; the private chat
    qq:private-5 (whose bare key is no chat any more) must not take that folder over at the next start,
    which would have shown it group 7's notes and written its own among them."""
    data = tmp_path / "data"
    app = await build_app(ConfigStore(Settings(), None), data, ManualClock(T0), watch_config=False)
    try:
        memory, notes = app.memory, app.memory.notes
        assert notes is not None
        await memory.record_many([make_message(1, chat="5", platform="qq")])
        await memory.record_many([make_message(2, chat="7", platform="qq")])
        await memory.record_many(
            [make_message(3, chat="private-5", platform="qq", chat_kind=ChatKind.PRIVATE)]
        )
        await notes.for_chat("qq:7").set("群7的事", "只给群7看")
        group5, group7 = [await memory.find_chat(key) for key in ("qq:5", "qq:7")]
        assert group5 is not None and group7 is not None
        await merge_chats(app.db, group5.id, group7.id, now=T0.timestamp(), notes=notes)
    finally:
        await app.close()
    app = await build_app(ConfigStore(Settings(), None), data, ManualClock(T0), watch_config=False)
    try:
        assert app.memory.notes is not None
        assert await app.memory.notes.for_chat("qq:private-5").list() == []
        assert await app.memory.notes.for_chat("qq:7").list() == ["群7的事"]
    finally:
        await app.close()
