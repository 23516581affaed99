"""NoteStore operations: get/set/delete, embeds, rename with backlinks and merge, extract, hints."""

import os
from pathlib import Path

import pytest

from memory.notes import (
    NoteChanged,
    NoteError,
    NoteNotFound,
    NoteScopes,
    NoteStore,
    PassageNotFound,
    chat_folder_name,
    version_of,
)
from memory.notes.store import MOVED_FILE, moved_to


@pytest.fixture
def store(tmp_path: Path) -> NoteStore:
    return NoteStore(tmp_path / "notes")


async def test_set_get_list_delete(store: NoteStore) -> None:
    assert await store.get("规则") is None
    assert await store.set("规则", "不许刷屏") is True
    assert await store.set("规则", "不许刷屏，不许发广告") is False
    assert await store.get("规则") == "不许刷屏，不许发广告"
    assert (store.root / "规则.md").read_text(encoding="utf-8") == "不许刷屏，不许发广告"
    assert await store.list() == ["规则"]
    assert await store.delete("规则") is True
    assert await store.delete("规则") is False
    assert await store.list() == []


async def test_embed_expansion_at_depths_with_a_cycle(store: NoteStore) -> None:
    await store.set("A", "a1 ![[B]] a2")
    await store.set("B", "b1 ![[C]]")
    await store.set("C", "c1 ![[A]] [[B]]")
    assert await store.get("A", 0) == "a1 ![[B]] a2"
    assert await store.get("A", 1) == "a1 ![[B]]start\n\nb1 ![[C]]\n\n![[B]]end a2"
    assert await store.get("A", 2) == (
        "a1 ![[B]]start\n\nb1 ![[C]]start\n\nc1 ![[A]] [[B]]\n\n![[C]]end\n\n![[B]]end a2"
    )
    assert await store.get("A", 3) == (
        "a1 ![[B]]start\n\nb1 ![[C]]start\n\n"
        "c1 ![[A]]start\n\n(cycle: A is already expanded above)\n\n![[A]]end [[B]]"
        "\n\n![[C]]end\n\n![[B]]end a2"
    )


async def test_embed_of_missing_note_is_marked(store: NoteStore) -> None:
    await store.set("A", "![[无]]")
    assert await store.get("A", 1) == "![[无]]start\n\n(no note named 无 yet)\n\n![[无]]end"


async def test_writing_back_an_expanded_note_keeps_the_embed(store: NoteStore) -> None:
    await store.set("A", "a ![[B]]")
    await store.set("B", "b")
    await store.set("A", (await store.get("A", 2)) + " more")
    assert await store.get("A") == "a ![[B]] more"


async def test_rename_rewrites_backlinks(store: NoteStore) -> None:
    await store.set("Old", "old body, self [[Old]]")
    await store.set("P", "see [[Old]] and ![[Old]] and [[Older]]")
    await store.set("Q", "[[ Old ]] only")
    await store.set("R", "unrelated")
    result = await store.rename("Old", "New")
    assert (result.merged, result.rewritten) == (False, ("P", "Q"))
    assert await store.list() == ["New", "P", "Q", "R"]
    assert await store.get("New") == "old body, self [[New]]"
    assert await store.get("P") == "see [[New]] and ![[New]] and [[Older]]"
    assert await store.get("Q") == "[[New]] only"
    assert await store.backlinks("New") == ["P", "Q"]
    assert await store.backlinks("Old") == []


async def test_rename_into_existing_note_merges_target_first(store: NoteStore) -> None:
    await store.set("小明", "小明 likes tea")
    await store.set("明哥", "明哥 is 小明's nickname")
    await store.set("P", "ask [[明哥]]")
    result = await store.rename("明哥", "小明")
    assert result.merged is True
    assert await store.get("小明") == "小明 likes tea\n\n明哥 is 小明's nickname\n"
    assert await store.get("P") == "ask [[小明]]"
    assert await store.list() == ["P", "小明"]


async def test_rename_missing_note_fails_and_changes_nothing(store: NoteStore) -> None:
    await store.set("P", "[[Ghost]]")
    with pytest.raises(NoteNotFound):
        await store.rename("Ghost", "New")
    assert await store.get("P") == "[[Ghost]]"


async def test_extract_moves_passage_and_leaves_link(store: NoteStore) -> None:
    await store.set("日记", "第一段。\n\n关于猫：猫叫咪咪。\n\n第三段。")
    await store.extract("日记", "关于猫：猫叫咪咪。", "猫")
    assert await store.get("日记") == "第一段。\n\n[[猫]]\n\n第三段。"
    assert await store.get("猫") == "关于猫：猫叫咪咪。\n"
    await store.set("日记2", "咪咪喜欢鱼。")
    await store.extract("日记2", "咪咪喜欢鱼。", "猫")
    assert await store.get("猫") == "关于猫：猫叫咪咪。\n\n咪咪喜欢鱼。\n"
    assert await store.get("日记2") == "[[猫]]"


async def test_extract_errors_change_nothing(store: NoteStore) -> None:
    await store.set("S", "text")
    with pytest.raises(PassageNotFound):
        await store.extract("S", "absent", "N")
    with pytest.raises(NoteNotFound):
        await store.extract("Missing", "text", "N")
    with pytest.raises(NoteError):
        await store.extract("S", "text", "S")
    assert await store.list() == ["S"]
    assert await store.get("S") == "text"


async def test_hints_and_suggestions_on_the_store(store: NoteStore) -> None:
    await store.set("hub", "[[a]] [[b]] [[c]]")  # (1 + 1 + 1) / 2 = 1.5
    await store.set("pair", "[[a]] [[b]]")  # 2 / 1 = 2
    await store.set("a", "x" * 100)  # value 0.01
    await store.set("b", "y" * 10)  # value 0.1
    assert [s.name for s in await store.hints(2)] == ["pair", "hub"]
    hub = next(s for s in await store.scores() if s.name == "hub")
    assert hub.weight == pytest.approx(1.5)
    # hub: 1.5 / 17 ≈ 0.088; pair: 2 / 11 ≈ 0.18; b is exactly 0.1, not below 0.1
    assert [s.name for s in await store.suggestions(0.1, 5)] == ["a", "hub"]
    assert [s.name for s in await store.suggestions(0.5, 5)] == ["a", "hub", "b", "pair"]


async def test_hand_edited_files_are_picked_up(store: NoteStore) -> None:
    await store.set("A", "plain")
    assert [s.name for s in await store.hints(1)] == ["A"]
    (store.root / "A.md").write_text("now links [[B]] [[C]]", encoding="utf-8")
    (store.root / "B.md").write_text("by hand ![[C]]", encoding="utf-8")
    (store.root / "C.md").write_text("c", encoding="utf-8")
    (store.root / "not a note.txt").write_text("ignored", encoding="utf-8")
    (store.root / "a..b.md").write_text("invalid name, ignored", encoding="utf-8")
    assert await store.list() == ["A", "B", "C"]
    assert await store.get("B", 1) == "by hand ![[C]]start\n\nc\n\n![[C]]end"
    assert await store.backlinks("C") == ["A", "B"]
    assert [s.name for s in await store.hints(1)] == ["A"]  # (1 + 1) / 1 = 2
    os.remove(store.root / "B.md")
    assert await store.list() == ["A", "C"]


async def test_scopes_keep_chats_apart(tmp_path: Path) -> None:
    scopes = NoteScopes(tmp_path)
    one, other, shared = scopes.for_chat("qq:1"), scopes.for_chat("qq/1"), scopes.global_scope()
    assert scopes.for_chat("qq:1") is one
    assert len({one.root, other.root, shared.root}) == 3
    assert chat_folder_name("qq:1").startswith("qq_1-")
    assert chat_folder_name("../..") != chat_folder_name("..")
    assert all(p.parent.parent == tmp_path for p in (one.root, other.root))
    await one.set("n", "for chat 1")
    assert await other.get("n") is None
    assert await shared.list() == []


async def test_a_note_file_not_in_utf8_is_never_rewritten_from_its_garbled_text(store: NoteStore) -> None:
    await store.set("plan", "明天爬山")
    gbk = "会议记录 [[plan]] 明天".encode("gbk")
    (store.root / "会议.md").write_bytes(gbk)
    assert "[[plan]]" in (await store.get("会议") or "")
    with pytest.raises(NoteError, match="'会议' is not UTF-8"):
        await store.rename("plan", "计划")
    with pytest.raises(NoteError, match="not UTF-8"):
        await store.rename("会议", "meeting")
    with pytest.raises(NoteError, match="not UTF-8"):
        await store.append("会议", "more")
    with pytest.raises(NoteError, match="not UTF-8"):
        await store.extract("会议", "[[plan]]", "x")
    with pytest.raises(NoteError, match="not UTF-8"):
        await store.extract("plan", "明天", "会议")
    assert (store.root / "会议.md").read_bytes() == gbk
    assert await store.list() == ["plan", "会议"]
    assert await store.get("plan") == "明天爬山"
    assert await store.set("会议", "重写 [[plan]]") is False  # replacing it whole is allowed
    assert (await store.rename("plan", "计划")).rewritten == ("会议",)


async def test_a_hand_saved_bom_and_crlf_are_not_part_of_the_text(store: NoteStore) -> None:
    store.root.mkdir(parents=True)
    (store.root / "规则.md").write_bytes("\ufeff不许刷屏\r\n[[群主]]\r\n".encode())
    assert await store.get("规则") == "不许刷屏\n[[群主]]\n"


async def test_a_note_file_named_in_nfd_is_read_and_then_renamed_to_nfc(store: NoteStore) -> None:
    """macOS writes "Café" decomposed (e + U+0301): such a file was skipped, and a write made a twin."""
    store.root.mkdir(parents=True)
    (store.root / "Cafe\u0301.md").write_text("menu [[规则]]", encoding="utf-8")
    assert await store.list() == ["Café"]
    assert await store.get("Café") == "menu [[规则]]"
    assert await store.backlinks("规则") == ["Café"]
    await store.append("Café", "espresso")
    assert sorted(os.listdir(store.root)) == [".lock", "Café.md"]
    assert await store.get("Café") == "menu [[规则]]\n\nespresso\n"


async def test_an_nfd_twin_of_an_existing_note_is_left_alone(store: NoteStore) -> None:
    await store.set("Café", "nfc")
    (store.root / "Cafe\u0301.md").write_text("nfd", encoding="utf-8")
    assert await store.list() == ["Café"] and await store.get("Café") == "nfc"
    await store.append("Café", "more")
    assert (store.root / "Cafe\u0301.md").read_text(encoding="utf-8") == "nfd", "nothing is lost"


async def test_set_with_a_stale_base_is_refused_and_writes_nothing(store: NoteStore) -> None:
    await store.set("聚餐", "周六火锅")
    seen = version_of("周六火锅")
    await store.append("聚餐", "改到周日")
    with pytest.raises(NoteChanged) as refused:
        await store.set("聚餐", "周六火锅，七点", base=seen)
    assert refused.value.current == "周六火锅\n\n改到周日\n"
    assert await store.get("聚餐") == "周六火锅\n\n改到周日\n"
    assert await store.set("聚餐", "周日火锅，七点", base=version_of(refused.value.current)) is False
    await store.delete("聚餐")
    with pytest.raises(NoteChanged, match="was deleted"):
        await store.set("聚餐", "again", base=version_of("周日火锅，七点"))
    assert await store.list() == []


async def test_moved_files_leading_round_in_a_loop_are_ignored(tmp_path: Path) -> None:
    """Three folders whose `.moved` files name each other in a ring (a corrupt or hostile file): each
    folder's notes are its own. Before, the chain was followed 64 steps and, 64 not being a multiple of
    3, a store landed in another folder whose chain led on again, so a write looped forever."""
    folders = [tmp_path / "chats" / chat_folder_name(key) for key in ("a", "b", "c")]
    for folder, following in zip(folders, folders[1:] + folders[:1], strict=True):
        folder.mkdir(parents=True)
        (folder / MOVED_FILE).write_text(following.name, encoding="utf-8")
    assert [moved_to(folder) for folder in folders] == folders
    store = NoteScopes(tmp_path).for_chat("a")
    assert await store.set("规则", "不许刷屏") is True
    assert (folders[0] / "规则.md").read_text(encoding="utf-8") == "不许刷屏"


async def test_a_moved_in_name_shortened_to_fit_keeps_whole_emoji(tmp_path: Path) -> None:
    """A note moved in under a taken name gets ` (<label>)`; when the whole is over the name's 200
    bytes the name is shortened. It was shortened a code point at a time, leaving half a ZWJ family
    emoji (`👨` and a dangling joiner) before the label."""
    family = "👨\u200d👩\u200d👧"
    name = "群" * 55 + family
    ours, theirs = NoteStore(tmp_path / "ours"), NoteStore(tmp_path / "theirs")
    await ours.set(name, "ours")
    await theirs.set(name, "theirs")
    moves = await ours.adopt(theirs, "from onebot_v11:group:123")
    assert moves == [(name, "群" * 55 + " (from onebot_v11:group:123)")]
    assert await ours.get(moves[0][1]) == "theirs"
    assert await ours.get(name) == "ours"


async def test_control_characters_in_a_note_are_dropped_as_in_messages_newlines_and_tabs_kept(
    store: NoteStore,
) -> None:
    """A NUL (or any other control character) in a note's content was written to its file as is."""
    await store.set("规则", "不许\x00刷屏\x07\n\t一\x1b[31m二\r\n")
    assert (store.root / "规则.md").read_text(encoding="utf-8") == "不许刷屏\n\t一[31m二\n"
    await store.append("规则", "三\x00四")
    assert await store.get("规则") == "不许刷屏\n\t一[31m二\n\n三四\n"


async def test_a_lone_surrogate_in_a_note_is_still_refused_not_dropped(store: NoteStore) -> None:
    with pytest.raises(NoteError, match="lone surrogate at 2"):
        await store.set("规则", "不许\ud800刷屏")
    assert await store.get("规则") is None
