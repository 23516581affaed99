from datetime import UTC, datetime

import pytest

from memory.persons.speech import Utterance, own_clauses, own_text
from memory.types import ChatMessage, Segment, SegmentKind
from tests.child_reader import read_in_child


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("我喜欢看小说，我住在北京", "我喜欢看小说，我住在北京"),
        ("我跟你说，我住在北京", "我跟你说，我住在北京"),
        ("我喜欢“三体”", "我喜欢“三体”"),
        ("小红说她住在北京。我住在上海", "小红。我住在上海"),
        ("> 我住在北京\n我住在上海", "我住在上海"),
        ("I live in Paris. She said she lives in Rome", "I live in Paris. She "),
    ],
)
def test_own_text_blanks_other_peoples_words(text, kept):
    masked = own_text(text)
    assert len(masked) == len(text)
    assert "".join(masked.split("\n")) == kept


# A member's run of "a'" before a report: "Tom said" is still found after it.
APOSTROPHE_RUN_READER = """
import json
from memory.persons.speech import own_text
text = "a'" * 100_000 + " Tom said he lives in Rome"
print(json.dumps(own_text(text)[len(text) - 26 :].strip()))
"""


def test_a_run_of_apostrophes_is_read_at_once():
    """Found by QA pass 17 (security): the report pattern could start its subject after every apostrophe
    of "a'a'a'…", each start reading to the run's end: 20,000 characters took seconds per message with
    the GIL held. Read in a child process with a 120 s guard (it takes milliseconds; the old pattern
    needs about ten minutes for these 200,000 characters)."""
    found = read_in_child(APOSTROPHE_RUN_READER)
    assert found == "Tom"


def test_questions_are_flagged():
    utterance = Utterance("k", "me", "我住在北京。你住在哪？", datetime(2024, 1, 1, tzinfo=UTC))
    assert [(c.text, c.question) for c in own_clauses(utterance)] == [
        ("我住在北京", False),
        ("你住在哪", True),
    ]


def test_from_message_keeps_only_own_text_segments():
    message = ChatMessage(
        platform="qq",
        chat_id="g1",
        message_id="42",
        sender_id="u1",
        text="[reply] 我住在上海 我住在北京",
        time=datetime(2024, 1, 1, tzinfo=UTC),
        mentions=("u2",),
        segments=(
            Segment(SegmentKind.REPLY, "我住在上海", "41"),
            Segment(SegmentKind.MENTION, "@bob ", "u2"),
            Segment(SegmentKind.TEXT, "我住在北京"),
        ),
    )
    utterance = Utterance.from_message(
        message, person_of=lambda uid: f"person:{uid}", reply_to_id="person:u3"
    )
    assert utterance.text == "@bob 我住在北京"
    assert utterance.key == "qq:g1:42"
    assert utterance.speaker_id == "person:u1" and utterance.mentioned_ids == ("person:u2",)


def test_bad_utterance_is_rejected():
    with pytest.raises(ValueError, match="speaker_id"):
        Utterance("k", "", "hi", datetime(2024, 1, 1, tzinfo=UTC))
