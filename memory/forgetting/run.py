"""One forgetting pass over the database (or a dry run of it): delete, log, promote — atomically.

Only ChatHistory rows (with their full-text entries and vectors) are ever deleted; raw messages and
jargon are not touched. Each deletion is
written to `forget_log` (id, chat, theme, stage, count, time) in the same transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.store import drop_vectors
from memory.forgetting.policy import ForgetPolicy, Row, StagePlan, plan_pass
from memory.models import ChatHistory, ForgetLogEntry
from memory.storage import Database
from memory.storage.fts import unindex_rows

Scope = Literal["global", "chat"]


@dataclass(frozen=True, slots=True)
class Forgotten:
    """A ChatHistory row the pass deletes (or would delete)."""

    id: int
    chat_id: int
    theme: str
    stage: int
    count: int
    end: Literal["low", "high"]


@dataclass(slots=True)
class ForgetReport:
    """What a pass did (or, with `dry_run`, would do)."""

    dry_run: bool
    plans: list[StagePlan] = field(default_factory=list)
    forgotten: list[Forgotten] = field(default_factory=list)
    promoted: dict[int, int] = field(default_factory=dict)  # stage → rows moved to it


async def _rows(session: AsyncSession, policy: ForgetPolicy) -> list[tuple[int, Row]]:
    # A topic cannot have ended after it was packed (`created_at`): an end dated later is a member's
    # wrong clock (times up to the year 9000 are accepted), which would keep the topic from ever
    # being old enough for a stage. The stored end time is left as it is.
    ended = func.min(ChatHistory.end_time, ChatHistory.created_at)
    query = select(
        ChatHistory.chat_id, ChatHistory.id, ChatHistory.count, ended, ChatHistory.forget_times
    ).where(ChatHistory.forget_times < len(policy.stages))
    return [(int(c), Row(int(i), int(n), float(e), int(f))) for c, i, n, e, f in await session.execute(query)]


def _plan(
    policy: ForgetPolicy, rows: Sequence[tuple[int, Row]], now: datetime, scope: Scope, chat_id: int | None
) -> list[StagePlan]:
    """The pass's plans. In "global" scope cohorts span every chat, so a pass restricted to one chat
    decides over all rows and keeps only that chat's part (what the full pass would do to it)."""
    if scope == "global":
        plans = plan_pass(policy, [r for _, r in rows], now)
        if chat_id is None:
            return plans
        mine = [r for c, r in rows if c == chat_id]
        return [plan.restricted(mine, now) for plan in plans]
    by_chat: dict[int, list[Row]] = defaultdict(list)
    for chat, row in rows:
        if chat_id is None or chat == chat_id:
            by_chat[chat].append(row)
    return [plan for chat in sorted(by_chat) for plan in plan_pass(policy, by_chat[chat], now)]


async def _describe(session: AsyncSession, plans: Sequence[StagePlan]) -> list[Forgotten]:
    ends = {i: (p.stage.number, "low") for p in plans for i in p.deleted_low}
    ends |= {i: (p.stage.number, "high") for p in plans for i in p.deleted_high}
    if not ends:
        return []
    query = select(ChatHistory.id, ChatHistory.chat_id, ChatHistory.theme, ChatHistory.count).where(
        ChatHistory.id.in_(list(ends))
    )
    found = [
        Forgotten(int(i), int(c), str(t), ends[i][0], int(n), ends[i][1])  # type: ignore[arg-type]
        for i, c, t, n in await session.execute(query)
    ]
    return sorted(found, key=lambda f: (-f.stage, f.chat_id, f.count, f.id))


async def forget_pass(
    db: Database,
    now: datetime,
    policy: ForgetPolicy,
    scope: Scope = "global",
    chat_id: int | None = None,
    dry_run: bool = False,
) -> ForgetReport:
    """Run (or, with `dry_run`, only plan) one pass. `scope` "chat" forms cohorts per chat;
    `chat_id` restricts the pass to one chat's rows: it deletes and promotes exactly what the full
    pass would do to them (in "global" scope their cohorts still span every chat)."""
    report = ForgetReport(dry_run)
    if dry_run:
        async with db.read() as session:
            report.plans = _plan(policy, await _rows(session, policy), now, scope, chat_id)
            report.forgotten = await _describe(session, report.plans)
        report.promoted = _promotions(report.plans)
        return report
    async with db.write() as session:
        report.plans = _plan(policy, await _rows(session, policy), now, scope, chat_id)
        report.forgotten = await _describe(session, report.plans)
        await _apply(session, report, now)
    report.promoted = _promotions(report.plans)
    return report


def _promotions(plans: Sequence[StagePlan]) -> dict[int, int]:
    moved: dict[int, int] = defaultdict(int)
    for plan in plans:
        moved[plan.stage.number] += len(plan.promoted)
    return dict(moved)


async def _apply(session: AsyncSession, report: ForgetReport, now: datetime) -> None:
    ids = [f.id for f in report.forgotten]
    if ids:
        session.add_all(
            ForgetLogEntry(
                chat_history_id=f.id,
                chat_id=f.chat_id,
                theme=f.theme,
                stage=f.stage,
                count=f.count,
                time=now.timestamp(),
            )
            for f in report.forgotten
        )
        await session.execute(delete(ChatHistory).where(ChatHistory.id.in_(ids)))
        await unindex_rows(session, "chat_history_fts", ids)
        await drop_vectors(session, "history", ids)
    for plan in report.plans:
        if plan.promoted:
            await session.execute(
                update(ChatHistory)
                .where(ChatHistory.id.in_(plan.promoted))
                .values(forget_times=plan.stage.number)
            )


async def forgotten_count(session: AsyncSession, chat_id: int) -> int:
    """How many of the chat's ChatHistory rows the kept forget log lists as deleted."""
    query = select(func.count()).select_from(ForgetLogEntry).where(ForgetLogEntry.chat_id == chat_id)
    return int((await session.execute(query)).scalar_one())


async def forget_log(
    session: AsyncSession, chat_id: int | None = None, limit: int = 50
) -> list[ForgetLogEntry]:
    """The latest deletions, newest first."""
    query = select(ForgetLogEntry).order_by(ForgetLogEntry.time.desc(), ForgetLogEntry.id.desc()).limit(limit)
    if chat_id is not None:
        query = query.where(ForgetLogEntry.chat_id == chat_id)
    return list((await session.scalars(query)).all())
