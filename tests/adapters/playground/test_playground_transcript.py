"""The page's transcripts stay bounded: messages per chat and chats kept."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from adapters.playground.transcript import Transcripts
from memory.types import ChatKind, ChatMessage
from tests.conftest import T0


def said(chat: str, n: int, kind: ChatKind = ChatKind.GROUP) -> ChatMessage:
    return ChatMessage(
        platform="playground",
        chat_id=chat,
        message_id=f"r-{n}",
        sender_id="pg-a",
        sender_name="alice",
        text=f"message {n}",
        time=T0 + timedelta(seconds=n),
        chat_kind=kind,
    )


def test_each_chat_keeps_its_newest_messages_and_says_when_some_were_missed() -> None:
    transcripts = Transcripts(keep=3, max_chats=10)
    for n in range(1, 6):
        transcripts.add(said("g1", n))
    transcripts.add(said("g2", 6))
    page = transcripts.after("g1", 0)
    assert [e.message.message_id for e in page.entries] == ["r-3", "r-4", "r-5"]
    assert page.missed and page.cursor == 5 and page.kind is ChatKind.GROUP
    later = transcripts.after("g1", 4)
    assert [e.seq for e in later.entries] == [5] and not later.missed
    assert transcripts.after("g1", 5).entries == [] and transcripts.after("g1", 5).cursor == 5
    assert transcripts.find("g1", "r-2") is None, "a dropped message can no longer be replied to"
    assert transcripts.find("g1", "r-4") is not None and transcripts.find("g2", "r-4") is None


def test_the_chat_idle_longest_is_dropped_beyond_the_limit() -> None:
    transcripts = Transcripts(keep=5, max_chats=2)
    transcripts.add(said("g1", 1))
    transcripts.add(said("dm", 2, ChatKind.PRIVATE))
    transcripts.add(said("g1", 3))
    transcripts.add(said("g3", 4))
    assert [chat for chat, _kind, _newest in transcripts.chats()] == ["g1", "g3"]
    assert transcripts.kind_of("dm") is None and transcripts.after("dm", 0).entries == []


def test_a_cursor_from_an_earlier_run_reads_from_the_start() -> None:
    transcripts = Transcripts(keep=5, max_chats=2)
    transcripts.add(said("g1", 1))
    assert [e.seq for e in transcripts.after("g1", 400).entries] == [1]


def test_an_edit_and_a_deletion_reach_a_reader_past_the_message_and_keep_the_order() -> None:
    transcripts = Transcripts(keep=5, max_chats=10)
    for n in range(1, 4):
        transcripts.add(said("g1", n))
    read = transcripts.after("g1", 0).cursor
    edited = transcripts.replace(replace(said("g1", 1), text="message 1, fixed", edited=True))
    assert edited is not None and edited.seq == 4 and edited.to_json()["edited"]
    assert transcripts.remove("g1", "r-2") is not None
    page = transcripts.after("g1", read)
    assert [e.message.text for e in page.entries] == ["message 1, fixed"]
    assert page.deleted == ["r-2"] and page.cursor == 5 and not page.missed
    whole = transcripts.after("g1", 0)
    assert [e.message.message_id for e in whole.entries] == ["r-1", "r-3"], "an edit keeps its place"
    assert transcripts.find("g1", "r-2") is None and transcripts.chats() == [("g1", ChatKind.GROUP, 5)]
    assert transcripts.replace(said("g1", 2)) is None and transcripts.remove("g1", "r-2") is None
    assert transcripts.remove("g2", "r-1") is None and transcripts.after("g1", 5).deleted == []


def test_deletions_kept_are_bounded_and_a_reader_behind_them_is_told() -> None:
    transcripts = Transcripts(keep=2, max_chats=10)
    for n in range(1, 5):
        transcripts.add(said("g1", n))
        transcripts.remove("g1", f"r-{n}")
    page = transcripts.after("g1", 0)
    assert page.entries == [] and page.deleted == ["r-3", "r-4"] and page.missed
    assert not transcripts.after("g1", 6).missed
