"""The online Disentangler on small hand-written conversations."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from memory.topics import DisentangleParams, Disentangler, ThreadMessage
from memory.topics.features import find_names

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def msg(key: str, minute: float, speaker: str, text: str, **kw: object) -> ThreadMessage:
    names = kw.pop("names", (speaker,))
    return ThreadMessage(key, T0 + timedelta(minutes=minute), speaker, names, text, **kw)  # type: ignore[arg-type]


def run(d: Disentangler, messages: list[ThreadMessage]) -> dict[str, str]:
    return {m.key: d.assign(m) for m in messages}


def two_topics() -> list[ThreadMessage]:
    return [
        msg("1", 0, "alice", "my wifi keeps dropping after the kernel update"),
        msg("2", 0.5, "bob", "what is the best editor for python on linux"),
        msg("3", 1, "carol", "bob: vim or vscode, both handle python fine"),
        msg("4", 1.5, "dave", "alice: which wifi card is it, intel?"),
        msg("5", 2, "bob", "carol: vscode it is, thanks"),
        msg("6", 2.5, "alice", "dave: yes an intel 7260 card"),
    ]


def test_name_at_start_links_to_the_named_speakers_thread() -> None:
    threads = run(Disentangler(), two_topics())
    assert threads["3"] == threads["2"] == threads["5"]
    assert threads["4"] == threads["1"] == threads["6"]
    assert threads["1"] != threads["2"]


def test_explicit_reply_link_wins_over_lexical_and_recency_cues() -> None:
    messages = [
        *two_topics(),
        # Lexically and by time this belongs with bob's editor talk; the platform says it replies to 1.
        msg("7", 3, "erin", "python editor vscode vim", reply_to="1"),
    ]
    threads = run(Disentangler(), messages)
    assert threads["7"] == threads["1"]
    # Without the hard rule, the reply feature alone still carries it.
    threads = run(Disentangler(DisentangleParams(trust_reply_links=False)), messages)
    assert threads["7"] == threads["1"]


def test_explicit_mention_links_like_a_name() -> None:
    messages = [
        msg("1", 0, "u1", "the build is failing on arm64", names=("小明",)),
        msg("2", 0.2, "u2", "anyone tried the new release of the game", names=("小红",)),
        msg("3", 0.4, "u3", "我看看", mentions=("u1",), names=("阿强",)),
    ]
    threads = run(Disentangler(), messages)
    assert threads["3"] == threads["1"]


def test_cjk_name_inside_text_links() -> None:
    messages = [
        msg("1", 0, "u1", "我的电脑开不了机了", names=("小明",)),
        msg("2", 0.2, "u2", "今晚有人一起打游戏吗", names=("小红",)),
        msg("3", 0.4, "u3", "小明你先拔掉电源试试", names=("阿强",)),
    ]
    threads = run(Disentangler(), messages)
    assert threads["3"] == threads["1"]
    assert threads["2"] != threads["1"]


def test_long_time_gap_starts_a_new_thread() -> None:
    first = [msg("1", 0, "alice", "my wifi keeps dropping"), msg("2", 1, "bob", "alice: which card?")]
    later = msg("3", 300, "alice", "bob: intel 7260")  # five hours later, beyond max_gap_minutes
    threads = run(Disentangler(), [*first, later])
    assert threads["2"] == threads["1"]
    assert threads["3"] == "3"


def test_system_lines_get_their_own_thread() -> None:
    messages = [msg("1", 0, "alice", "hello"), msg("2", 0.1, "bob", "bob has joined", is_system=True)]
    threads = run(Disentangler(), messages)
    assert threads["2"] == "2"


def test_a_key_seen_before_gets_the_same_answer() -> None:
    d = Disentangler()
    messages = two_topics()
    first = run(d, messages)
    assert d.assign(messages[3]) == first["4"]


def test_naive_time_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        ThreadMessage("1", datetime(2024, 1, 1), "a", ("a",), "hi")


def random_chat(n: int, seed: int) -> list[ThreadMessage]:
    rng = random.Random(seed)
    people = [f"user{i}" for i in range(12)]
    vocab = [f"w{i}" for i in range(3000)] + ["the", "a", "is", "to"] * 50
    out = []
    minute = 0.0
    for i in range(n):
        minute += rng.choice([0, 0.2, 0.5, 1, 3])
        speaker = rng.choice(people)
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 12)))
        if rng.random() < 0.3:
            text = f"{rng.choice(people)}: {text}"
        reply = str(rng.randrange(i)) if i and rng.random() < 0.1 else None
        out.append(msg(str(i), minute, speaker, text, reply_to=reply, is_system=rng.random() < 0.05))
    return out


def test_state_round_trip_gives_identical_later_assignments() -> None:
    chat = random_chat(400, seed=1)
    original = Disentangler()
    run(original, chat[:250])
    restored = Disentangler(state=json.loads(json.dumps(original.state())))
    rest = chat[250:]
    assert run(restored, rest) == run(original, rest)


def test_thread_ids_stay_unique_after_restore() -> None:
    chat = random_chat(300, seed=2)
    d = Disentangler()
    before = run(d, chat[:150])
    d = Disentangler(state=json.loads(json.dumps(d.state())))
    after = run(d, chat[150:])
    new_threads = {t for k, t in after.items() if t == k}  # threads started after the restore
    assert new_threads
    assert not new_threads & set(before.values())


def test_state_stays_bounded() -> None:
    params = DisentangleParams(max_candidates=40, reply_memory=300, idf_vocab=500)
    d = Disentangler(params)
    chat = random_chat(1600, seed=3)
    run(d, chat[:600])
    size_600 = len(json.dumps(d.state()))
    run(d, chat[600:])
    state = d.state()
    assert len(state["window"]) <= 2 * params.max_candidates
    assert len(state["threads"]) <= params.reply_memory
    assert len(state["df"]) <= params.idf_vocab
    assert len(json.dumps(state)) < 1.5 * size_600


def test_malformed_state_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="state"):
        Disentangler(state={"version": 1, "window": "nope"})
    with pytest.raises(ValueError, match="version"):
        Disentangler(state={"version": 99})


@pytest.mark.parametrize(
    ("text", "start", "anywhere"),
    [
        ("ud: try this", {"ud"}, set()),
        ("i could try", set(), set()),
        ("thanks ud, works", set(), {"ud"}),
        ("@ud, look", {"ud"}, set()),
        ("小明你好", {"xm"}, set()),
        ("好的小明", set(), {"xm"}),
    ],
)
def test_find_names(text: str, start: set[str], anywhere: set[str]) -> None:
    names = {"ud": "ud", "小明": "xm", "me": "me"}
    assert find_names(text, names, skip="me", min_chars=2) == (start, anywhere)


def test_old_history_arriving_after_live_messages_never_links_to_them() -> None:
    """An import of last month's log after today's talk: the old lines are far older than the window."""
    live = [msg(f"live{i}", i, f"u{i % 3}", f"周末去九溪爬山 带水 {i}") for i in range(6)]
    month_ago = -30 * 24 * 60
    old = [msg(f"old{i}", month_ago + i, f"u{i % 3}", f"周末去九溪爬山 {i}") for i in range(6)]
    threads = run(Disentangler(), [*live, *old])
    assert not {threads[m.key] for m in old} & {threads[m.key] for m in live}
