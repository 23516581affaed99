"""Four-stage forgetting: the pure policy (ages, shares, ties, stage moves, small cohorts) and the DB pass."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from memory.clock import ManualClock
from memory.embeddings.backfill import backfill
from memory.forgetting import MAIBOT_STAGES, ForgetPolicy, Row, Stage, forget_log, forget_pass, plan_pass
from memory.forgetting.policy import plan_stage
from memory.models import ChatHistory, EmbeddingVector, Message
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import bm25_search, index_rows, match_expression
from tests.conftest import T0, make_message
from tests.memory.embeddings.test_embeddings import TopicEmbedder

NOW = T0 + timedelta(days=30)


def rows(counts: list[int], age: timedelta, forget_times: int = 0, first_id: int = 1) -> list[Row]:
    end = (NOW - age).timestamp()
    return [Row(first_id + i, c, end, forget_times) for i, c in enumerate(counts)]


@pytest.mark.parametrize(
    ("stage", "old_enough", "too_young"),
    [
        (MAIBOT_STAGES[0], timedelta(minutes=31), timedelta(minutes=29)),
        (MAIBOT_STAGES[1], timedelta(hours=8, minutes=1), timedelta(hours=7, minutes=59)),
        (MAIBOT_STAGES[2], timedelta(hours=48, minutes=1), timedelta(hours=47, minutes=59)),
        (MAIBOT_STAGES[3], timedelta(days=7, minutes=1), timedelta(days=6, hours=23)),
    ],
)
def test_each_stage_takes_only_rows_older_than_its_age_at_its_forget_times(
    stage: Stage, old_enough: timedelta, too_young: timedelta
) -> None:
    policy = ForgetPolicy()
    prior = stage.number - 1
    cohort = rows(list(range(100)), old_enough, prior)
    young = rows([5] * 10, too_young, prior, first_id=1000)
    other_stage = rows([5] * 10, old_enough, (prior + 1) % 5, first_id=2000)
    plan = plan_stage(policy, stage, [*cohort, *young, *other_stage], NOW)
    assert plan.cohort == 100
    k = int(100 * stage.share)
    assert plan.deleted_low == list(range(1, k + 1))  # counts 0..k-1 are the ids 1..k
    assert sorted(plan.deleted_high) == list(range(101 - k, 101))
    assert sorted(plan.promoted) == list(range(k + 1, 101 - k))


def test_shares_come_from_the_policy() -> None:
    policy = ForgetPolicy(stages=(Stage(1, timedelta(minutes=1), 0.1),))
    plan = plan_pass(policy, rows(list(range(20)), timedelta(hours=1)), NOW)[0]
    assert len(plan.deleted_low) == 2 and len(plan.deleted_high) == 2 and len(plan.promoted) == 16


def test_ties_break_at_random_but_reproducibly_with_the_seed() -> None:
    cohort = rows([0] * 40, timedelta(hours=1))
    stage = MAIBOT_STAGES[0]
    first = plan_stage(ForgetPolicy(seed=1), stage, cohort, NOW)
    again = plan_stage(ForgetPolicy(seed=1), stage, list(reversed(cohort)), NOW)
    other = plan_stage(ForgetPolicy(seed=2), stage, cohort, NOW)
    assert first.deleted == again.deleted
    assert len(first.deleted) == 20
    assert set(first.deleted) != set(other.deleted)
    assert first.deleted_low != list(range(1, 11))  # not simply by id


def test_tie_breaking_only_orders_equal_counts() -> None:
    cohort = [*rows([1] * 5, timedelta(hours=1)), *rows([0, 9], timedelta(hours=1), first_id=100)]
    plan = plan_stage(ForgetPolicy(seed=7), MAIBOT_STAGES[0], cohort, NOW)
    assert plan.deleted_low == [100] and plan.deleted_high == [101]


def test_a_pass_moves_rows_one_stage_at_most() -> None:
    ancient = rows(list(range(8)), timedelta(days=60), forget_times=0)
    plans = plan_pass(ForgetPolicy(), ancient, NOW)
    by_stage = {p.stage.number: p for p in plans}
    assert by_stage[1].cohort == 8 and len(by_stage[1].promoted) == 4
    assert by_stage[2].cohort == 0 and not by_stage[2].promoted


def test_faithful_small_cohorts_wait_at_their_stage_as_maibot_does() -> None:
    """MaiBot skips a stage whose int(n × share) is 0: nothing is deleted and nothing moves on, so the
    rows are looked at again, with the rows that join them, at the next pass."""
    policy = ForgetPolicy()
    for n in (1, 2, 3):
        plan = plan_stage(policy, MAIBOT_STAGES[0], rows([0] * n, timedelta(hours=1)), NOW)
        assert plan.waiting and plan.deleted == [] and plan.promoted == []
    enough = plan_stage(policy, MAIBOT_STAGES[0], rows([0, 1, 2, 3], timedelta(hours=1)), NOW)
    assert not enough.waiting and enough.deleted_low == [1] and enough.deleted_high == [4]
    assert plan_stage(policy, MAIBOT_STAGES[3], rows([0] * 49, timedelta(days=8), 3), NOW).waiting
    fifty = plan_stage(policy, MAIBOT_STAGES[3], rows(list(range(50)), timedelta(days=8), 3), NOW)
    assert fifty.deleted_low == [1] and fifty.deleted_high == [50] and len(fifty.promoted) == 48


def test_a_stage_that_deletes_nothing_by_design_passes_its_rows_on() -> None:
    policy = ForgetPolicy(stages=(Stage(1, timedelta(minutes=1), 0.0), Stage(2, timedelta(minutes=1), 0.25)))
    plan = plan_stage(policy, policy.stages[0], rows([0, 1], timedelta(hours=1)), NOW)
    assert not plan.waiting and plan.deleted == [] and plan.promoted == [1, 2]


def test_round_up_deletes_from_small_cohorts() -> None:
    policy = ForgetPolicy(small_cohort="round_up")
    single = plan_stage(policy, MAIBOT_STAGES[0], rows([3], timedelta(hours=1)), NOW)
    assert single.deleted == [1] and single.promoted == []
    three = plan_stage(policy, MAIBOT_STAGES[0], rows([1, 5, 9], timedelta(hours=1)), NOW)
    assert three.deleted_low == [1] and three.deleted_high == [3] and three.promoted == [2]


def test_wait_holds_a_stage_until_its_cohort_is_big_enough() -> None:
    policy = ForgetPolicy(small_cohort="wait")  # min_cohort 0: ceil(1/0.25) = 4 at stage 1
    small = plan_stage(policy, MAIBOT_STAGES[0], rows([0, 1, 2], timedelta(hours=1)), NOW)
    assert small.waiting and small.deleted == [] and small.promoted == []
    enough = plan_stage(policy, MAIBOT_STAGES[0], rows([0, 1, 2, 3], timedelta(hours=1)), NOW)
    assert enough.deleted_low == [1] and enough.deleted_high == [4]
    fixed = ForgetPolicy(small_cohort="wait", min_cohort=6)
    assert plan_stage(fixed, MAIBOT_STAGES[0], rows([0] * 5, timedelta(hours=1)), NOW).waiting


def test_policy_rejects_misnumbered_or_excessive_stages() -> None:
    with pytest.raises(ValueError, match="numbered"):
        ForgetPolicy(stages=(Stage(2, timedelta(0), 0.1),))
    with pytest.raises(ValueError, match="share"):
        ForgetPolicy(stages=(Stage(1, timedelta(0), 0.6),))


# --- the database pass ------------------------------------------------------------------------


async def seed_history(db: Database, chat_id: int, counts: list[int], end_age: timedelta) -> list[int]:
    ids = []
    async with db.write() as session:
        for i, count in enumerate(counts):
            row = ChatHistory(
                chat_id=chat_id, theme=f"topic {i} 火锅", keywords=["火锅"], summary="s", key_points=[],
                original_text="t", participants=[], start_time=(NOW - end_age).timestamp() - 60,
                end_time=(NOW - end_age).timestamp(), source_message_ids=[], count=count, forget_times=0,
                provenance="offline", created_at=NOW.timestamp(),
            )  # fmt: skip
            session.add(row)
            await session.flush()
            ids.append(row.id)
        await index_rows(session, "chat_history_fts", [(i, "火锅 topic") for i in ids])
    return ids


async def test_a_pass_deletes_logs_promotes_and_keeps_raw_messages(
    memory: MemoryService, clock: ManualClock
) -> None:
    db = memory.db
    await memory.record_many([make_message(n, text=f"火锅 {n}") for n in range(5)])
    chat = (await memory.find_chat("test:g1")).id  # type: ignore[union-attr]
    ids = await seed_history(db, chat, [0, 1, 2, 3, 4, 5, 6, 7], timedelta(hours=1))
    report = await forget_pass(db, NOW, ForgetPolicy())
    assert report.dry_run is False
    # 8 rows at 25%: the two lowest and two highest counts go.
    assert sorted(f.id for f in report.forgotten) == [ids[0], ids[1], ids[6], ids[7]]
    assert report.promoted[1] == 4
    async with db.read() as session:
        left = (await session.execute(select(ChatHistory.id, ChatHistory.forget_times))).all()
        assert sorted(left) == [(i, 1) for i in ids[2:6]]
        log = await forget_log(session, chat)
        assert {(e.chat_history_id, e.stage) for e in log} == {
            (i, 1) for i in (ids[0], ids[1], ids[6], ids[7])
        }
        assert {e.count for e in log} == {0, 1, 6, 7}
        assert (await session.execute(select(func.count(Message.id)))).scalar_one() == 5
        match = match_expression("火锅")
        assert match is not None
        hits = {rowid for rowid, _ in await bm25_search(session, "chat_history_fts", match, 50)}
        assert hits == set(ids[2:6])
    # Every further pass, all the way through stage 4, leaves the raw messages alone.
    for days in (1, 3, 8, 30):
        await forget_pass(db, NOW + timedelta(days=days), ForgetPolicy(small_cohort="round_up"))
    async with db.read() as session:
        assert (await session.execute(select(func.count(Message.id)))).scalar_one() == 5
        assert (await session.execute(select(func.count(ChatHistory.id)))).scalar_one() < 4


async def test_a_topic_ending_on_a_wrong_clock_ages_from_when_it_was_packed(memory: MemoryService) -> None:
    """A topic holding a message dated in the year 8999 ended then, so it was never old enough for stage
    1 and could never be forgotten (here its cohort also stayed too small to decide); it now ages from
    when it was packed, and its stored end time is left as it was."""
    db = memory.db
    await memory.record(make_message(1))
    ids = await seed_history(db, 1, [1, 0, 2, 3], timedelta(hours=1))
    far = datetime(8999, 1, 1, tzinfo=UTC).timestamp()
    async with db.write() as session:
        await session.execute(update(ChatHistory).where(ChatHistory.id == ids[0]).values(end_time=far))
    report = await forget_pass(db, NOW + timedelta(hours=1), ForgetPolicy())
    assert sorted(f.id for f in report.forgotten) == [ids[1], ids[3]], "a cohort of 4 at 25%"
    async with db.read() as session:
        kept = (
            await session.execute(select(ChatHistory.id, ChatHistory.forget_times, ChatHistory.end_time))
        ).all()
    assert sorted(kept) == [(ids[0], 1, far), (ids[2], 1, (NOW - timedelta(hours=1)).timestamp())]


async def test_dry_run_reports_the_next_pass_and_changes_nothing(memory: MemoryService) -> None:
    db = memory.db
    await memory.record(make_message(1))
    ids = await seed_history(db, 1, [0, 1, 2, 3], timedelta(hours=1))
    dry = await forget_pass(db, NOW, ForgetPolicy(), dry_run=True)
    assert dry.dry_run and sorted(f.id for f in dry.forgotten) == [ids[0], ids[3]]
    async with db.read() as session:
        assert (await session.execute(select(func.count(ChatHistory.id)))).scalar_one() == 4
        assert set((await session.scalars(select(ChatHistory.forget_times))).all()) == {0}
        assert await forget_log(session) == []
    real = await forget_pass(db, NOW, ForgetPolicy())
    assert [f.id for f in real.forgotten] == [f.id for f in dry.forgotten]


async def test_chat_scope_forms_cohorts_per_chat(memory: MemoryService) -> None:
    db = memory.db
    await memory.record_many([make_message(1, chat="a"), make_message(2, chat="b")])
    await seed_history(db, 1, [0, 1], timedelta(hours=1))
    await seed_history(db, 2, [5, 6], timedelta(hours=1))
    assert len((await forget_pass(db, NOW, ForgetPolicy(), "global", dry_run=True)).forgotten) == 2
    assert (await forget_pass(db, NOW, ForgetPolicy(), "chat", dry_run=True)).forgotten == []
    only_b = await forget_pass(
        db, NOW, ForgetPolicy(small_cohort="round_up"), "chat", chat_id=2, dry_run=True
    )
    assert {f.chat_id for f in only_b.forgotten} == {2}


async def test_a_pass_for_one_chat_does_to_it_what_the_global_pass_would(memory: MemoryService) -> None:
    db = memory.db
    await memory.record_many([make_message(1, chat="a"), make_message(2, chat="b")])
    a = await seed_history(db, 1, [0, 1, 2, 3], timedelta(hours=1))
    await seed_history(db, 2, [10, 11, 12, 13], timedelta(hours=1))
    # Across both chats (8 rows, 2 per end) chat a holds the two lowest counts and none of the highest.
    full = await forget_pass(db, NOW, ForgetPolicy(), "global", dry_run=True)
    only_a = await forget_pass(db, NOW, ForgetPolicy(), "global", chat_id=1, dry_run=True)
    assert sorted(f.id for f in only_a.forgotten) == [f.id for f in full.forgotten if f.chat_id == 1]
    assert sorted(f.id for f in only_a.forgotten) == a[:2]
    stage1 = next(p for p in only_a.plans if p.stage.number == 1)
    assert (stage1.cohort, sorted(stage1.promoted)) == (4, a[2:])
    real = await forget_pass(db, NOW, ForgetPolicy(), "global", chat_id=1)
    assert [f.id for f in real.forgotten] == [f.id for f in only_a.forgotten]
    async with db.read() as session:
        rows = dict((await session.execute(select(ChatHistory.id, ChatHistory.forget_times))).all())
    assert rows == {a[2]: 1, a[3]: 1, **{i: 0 for i in range(5, 9)}}, "chat b's rows are left alone"


async def test_a_forgotten_topic_takes_its_vectors_along(memory: MemoryService) -> None:
    """The forgotten topic's vector goes with it, and the next topic is embedded in its own chat (it
    got the forgotten one's id before 0021_chat_history_autoincrement; it must never be passed over as
    if an old vector were its own)."""
    db = memory.db
    await memory.record_many([make_message(1, chat="a"), make_message(2, chat="b")])
    embedder = TopicEmbedder()
    [forgotten] = await seed_history(db, 1, [0], timedelta(hours=1))
    assert (await backfill(db, embedder, now=NOW.timestamp())).histories == 1
    report = await forget_pass(db, NOW, ForgetPolicy(small_cohort="round_up"))
    assert [f.id for f in report.forgotten] == [forgotten]
    async with db.read() as session:
        assert (
            await session.scalars(select(EmbeddingVector.ref_id).where(EmbeddingVector.kind == "history"))
        ).all() == []
    [later] = await seed_history(db, 2, [0], timedelta(hours=1))
    assert (await backfill(db, embedder, now=NOW.timestamp())).histories == 1
    async with db.read() as session:
        stored = (
            await session.execute(
                select(EmbeddingVector.ref_id, EmbeddingVector.chat_id).where(
                    EmbeddingVector.kind == "history"
                )
            )
        ).all()
    assert [tuple(r) for r in stored] == [(later, 2)]


async def test_topics_reaching_stage_one_a_few_per_pass_are_still_forgotten(memory: MemoryService) -> None:
    """Passes run every 5 minutes, so a stage's cohort is usually a row or two: they wait at their
    stage until int(n × share) rows can go at each end, instead of all passing it untouched."""
    db = memory.db
    await memory.record(make_message(1))
    ids: list[int] = []
    for n, count in enumerate([5, 0, 9, 3]):
        ids += await seed_history(db, 1, [count], timedelta(minutes=31) - timedelta(minutes=5 * n))
        report = await forget_pass(db, NOW + timedelta(minutes=5 * n), ForgetPolicy())
        if n < 3:
            assert report.forgotten == [] and report.promoted.get(1, 0) == 0
    assert {(f.id, f.end) for f in report.forgotten} == {(ids[1], "low"), (ids[2], "high")}
    async with db.read() as session:
        left = dict((await session.execute(select(ChatHistory.id, ChatHistory.forget_times))).all())
    assert left == {ids[0]: 1, ids[3]: 1}
