"""A typed @-mention of the bot or a member, as the console and the playground read it."""

import pytest

from adapters.base import mention_spans, mentions


@pytest.mark.parametrize(
    ("text", "addressed"),
    [
        ("@群忆 明天几点", True),
        ("@群忆你好", True),  # Chinese runs straight on
        ("＠群忆 在吗", True),  # a full-width at sign, as Chinese keyboards type it
        ("hey @qunyi-bot, when?", True),
        ("@10001 ping", True),
        ("群忆 在吗", False),
        ("write to me@qunyi-bot.example.com", False),  # an address, not a mention
        ("@qunyi-bottle is someone else", False),
        ("@100012 is another account", False),
    ],
)
def test_a_mention_of_the_bot_is_told_from_text_that_only_contains_its_name(
    text: str, addressed: bool
) -> None:
    assert mentions(text, "群忆", "qunyi-bot", "10001") is addressed


def test_an_empty_handle_mentions_nothing() -> None:
    assert not mentions("@ hello", "", "")


def test_each_typed_mention_of_a_handle_is_found_the_longest_handle_at_one_at() -> None:
    text = "@小红不红 和 ＠小红 去吗 @bob, mail me@bob.example, not @bobby"
    spans = mention_spans(text, ["小红", "小红不红", "bob", ""])
    assert [(text[start:end], handle) for start, end, handle in spans] == [
        ("@小红不红", "小红不红"),
        ("＠小红", "小红"),
        ("@bob", "bob"),
    ]
    assert mention_spans("@a@b hi", ["a@b", "b"]) == [(0, 4, "a@b")], "no mention inside another"
    assert mention_spans("no at here", ["bob"]) == []
