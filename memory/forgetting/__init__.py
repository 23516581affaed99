"""Four-stage, count-based forgetting of ChatHistory (never of raw messages or jargon)."""

from memory.forgetting.policy import (
    MAIBOT_STAGES,
    ForgetPolicy,
    Row,
    SmallCohort,
    Stage,
    StagePlan,
    plan_pass,
)
from memory.forgetting.run import ForgetReport, Forgotten, Scope, forget_log, forget_pass, forgotten_count

__all__ = [
    "MAIBOT_STAGES",
    "ForgetPolicy",
    "ForgetReport",
    "Forgotten",
    "Row",
    "Scope",
    "SmallCohort",
    "Stage",
    "StagePlan",
    "forget_log",
    "forget_pass",
    "forgotten_count",
    "plan_pass",
]
