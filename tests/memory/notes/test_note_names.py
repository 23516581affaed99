"""Name validation: nothing a model sends can reach outside the notes folder."""

from pathlib import Path

import pytest

from memory.notes import InvalidNoteName, NoteError, NoteStore, clean_name


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "..",
        "../escape",
        "a/../../etc/passwd",
        "/etc/passwd",
        "sub/note",
        "back\\slash",
        ".hidden",
        "a..b",
        "nul\x00byte",
        "line\nbreak",
        "tab\there",
        "para\u2029sep",
        "[[link]]",
        "x" * 101,
        "长" * 80,  # 80 characters but 240 UTF-8 bytes
        "lone\ud800surrogate",  # JSON "\ud800" from a model's tool call
    ],
)
def test_bad_names_are_refused(bad: str) -> None:
    with pytest.raises(InvalidNoteName):
        clean_name(bad)


def test_names_are_canonicalised() -> None:
    assert clean_name("  规则  ") == "规则"
    assert clean_name("Cafe\u0301") == "Café"  # NFD input → NFC
    assert clean_name("a.b c-d_e (1)") == "a.b c-d_e (1)"


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@pytest.mark.parametrize("bad", ["../escape", "sub/note", "..", "/abs"])
async def test_store_refuses_traversal_and_writes_nothing(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "scope"
    store = NoteStore(root)
    with pytest.raises(InvalidNoteName):
        await store.set(bad, "pwned")
    with pytest.raises(InvalidNoteName):
        await store.get(bad)
    with pytest.raises(InvalidNoteName):
        await store.rename("x", bad)
    assert _files_under(tmp_path) == []


async def test_note_text_with_a_lone_surrogate_is_refused_and_the_old_text_kept(tmp_path: Path) -> None:
    store = NoteStore(tmp_path / "scope")
    await store.set("规则", "旧的")
    with pytest.raises(NoteError, match="lone surrogate"):
        await store.set("规则", "新的\udc80")
    with pytest.raises(NoteError, match="lone surrogate"):
        await store.append("规则", "\ud800")
    assert await store.get("规则") == "旧的"


def test_a_long_bad_name_is_shown_cut_in_the_error() -> None:
    """The error quoted the whole name: a 10,000-character name made a 10,000-character error."""
    family = "👨\u200d👩\u200d👧\u200d👦"  # one grapheme of 7 code points, across the cut
    with pytest.raises(InvalidNoteName) as refused:
        clean_name("长" * 36 + family + "长" * 10_000)
    assert str(refused.value) == f"invalid note name '{'长' * 36}…': longer than 100 characters or 200 bytes"
    with pytest.raises(InvalidNoteName) as short:
        clean_name("a/b")
    assert str(short.value) == "invalid note name 'a/b': contains '/'"
