"""MaiBot's four-stage forgetting as a pure function over (id, count, end time) rows.

Stage s looks at rows that passed s-1 stages (`forget_times == s-1`) and ended more than the stage's
age ago: that cohort is sorted by `count` (times recalled), the top and bottom `share` are deleted,
and the survivors move to `forget_times = s`. Rows with equal counts are ordered by a seeded hash
of their id, so ties break at random but reproducibly. The stages and shares are MaiBot's (30 min /
25%, 8 h / 7%, 48 h / 5%, 7 days / 2%; the article's spoken summary says 8% for stage 2, its table and
MaiBot 7%).

One pass plans every stage over the same snapshot, so a row moves at most one stage per pass. MaiBot
runs stage 1 to 4 one after another, each reading the table again, so a row old enough for several
stages (imported history, whose end time is its true one) can pass them all in one run; here it takes
one pass (5 minutes) per stage, and a dry run shows exactly what the pass will do.

Small cohorts: MaiBot deletes `int(n × share)` rows at each end, and when that is 0 (a cohort of 3 at
25%, of 49 at 2%) it skips the stage: nothing is deleted and nothing moves on, so the rows wait at
their stage and are looked at again, with the rows that have joined them, at the next pass. As passes
run every few minutes, a cohort is usually a row or two; were those rows passed on untouched, nothing
would ever be forgotten. `small_cohort` chooses:
- "faithful": MaiBot's rounding down and skipping (the default); a stage with share 0 passes its rows on;
- "round_up": `ceil(n × share)` at each end (a lone row is deleted at its first stage);
- "wait": a stage leaves its cohort untouched until it has `min_cohort` rows (0 means the smallest
  cohort where rounding down deletes at least one row at each end, `ceil(1 / share)`: as "faithful"),
  then rounds down.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

SmallCohort = Literal["faithful", "round_up", "wait"]


@dataclass(frozen=True, slots=True)
class Stage:
    """Stage `number` (1-based): rows older than `min_age` with `forget_times == number - 1`."""

    number: int
    min_age: timedelta
    share: float

    def takes(self, row: Row, now: datetime) -> bool:
        """Whether `row` is in this stage's cohort at `now`: at the stage before, and old enough."""
        cutoff = now.timestamp() - self.min_age.total_seconds()
        return row.forget_times == self.number - 1 and row.end_time < cutoff


MAIBOT_STAGES: tuple[Stage, ...] = (
    Stage(1, timedelta(minutes=30), 0.25),
    Stage(2, timedelta(hours=8), 0.07),
    Stage(3, timedelta(hours=48), 0.05),
    Stage(4, timedelta(days=7), 0.02),
)


@dataclass(frozen=True, slots=True)
class ForgetPolicy:
    """The stages, the small-cohort rule and the tie-breaking seed."""

    stages: tuple[Stage, ...] = MAIBOT_STAGES
    small_cohort: SmallCohort = "faithful"
    min_cohort: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        for i, stage in enumerate(self.stages, start=1):
            if stage.number != i:
                raise ValueError(f"stage {i} is numbered {stage.number}")
            if not 0.0 <= stage.share <= 0.5:
                raise ValueError(f"stage {i}: share {stage.share} must be within 0–0.5")

    def per_end(self, stage: Stage, n: int) -> int | None:
        """Rows deleted at each end of a cohort of `n`; None when the stage waits for more rows."""
        if n == 0:
            return 0
        if self.small_cohort == "wait":
            needed = self.min_cohort or (math.ceil(1 / stage.share) if stage.share > 0 else 1)
            if n < needed:
                return None
        exact = n * stage.share
        # Both ends together never take more than the cohort.
        k = math.ceil(exact - 1e-9) if self.small_cohort == "round_up" else math.floor(exact + 1e-9)
        if k == 0 and stage.share > 0 and self.small_cohort == "faithful":
            return None
        return min(k, n)


@dataclass(frozen=True, slots=True)
class Row:
    """What forgetting needs of a ChatHistory row (`end_time` in unix seconds)."""

    id: int
    count: int
    end_time: float
    forget_times: int


@dataclass(slots=True)
class StagePlan:
    """One stage's decision: which rows go (lowest and highest count) and which move on."""

    stage: Stage
    cohort: int
    deleted_low: list[int] = field(default_factory=list)
    deleted_high: list[int] = field(default_factory=list)
    promoted: list[int] = field(default_factory=list)
    waiting: bool = False

    @property
    def deleted(self) -> list[int]:
        return [*self.deleted_low, *self.deleted_high]

    def restricted(self, rows: Sequence[Row], now: datetime) -> StagePlan:
        """This decision as it touches `rows` only (some of the rows it was made over): their part of
        the cohort, and which of them go and move on."""
        ids = {r.id for r in rows}
        return StagePlan(
            self.stage,
            sum(1 for r in rows if self.stage.takes(r, now)),
            [i for i in self.deleted_low if i in ids],
            [i for i in self.deleted_high if i in ids],
            [i for i in self.promoted if i in ids],
            self.waiting,
        )


def tie_key(seed: int, stage: int, row_id: int) -> bytes:
    """A seeded pseudo-random order for rows of equal count, stable across runs."""
    return hashlib.blake2b(f"{seed}:{stage}:{row_id}".encode(), digest_size=8).digest()


def plan_stage(policy: ForgetPolicy, stage: Stage, rows: Iterable[Row], now: datetime) -> StagePlan:
    """Select the stage's cohort from `rows` and decide it (pure: nothing is changed)."""
    cohort = [r for r in rows if stage.takes(r, now)]
    plan = StagePlan(stage, len(cohort))
    k = policy.per_end(stage, len(cohort))
    if k is None:
        plan.waiting = True
        return plan
    ordered = sorted(cohort, key=lambda r: (r.count, tie_key(policy.seed, stage.number, r.id)))
    low = ordered[:k]
    high = ordered[k:][::-1][:k]
    gone = {r.id for r in (*low, *high)}
    plan.deleted_low = [r.id for r in low]
    plan.deleted_high = [r.id for r in high]
    plan.promoted = [r.id for r in ordered if r.id not in gone]
    return plan


def plan_pass(policy: ForgetPolicy, rows: Sequence[Row], now: datetime) -> list[StagePlan]:
    """All stages of one pass, last stage first, so a row moves at most one stage per pass."""
    return [plan_stage(policy, stage, rows, now) for stage in reversed(policy.stages)]
