"""From `[topics]` and `[forgetting]` settings to the domain's objects, and registering their jobs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from bot.config import Settings
from memory.forgetting import ForgetPolicy, Scope, Stage
from memory.history.pack import PackOptions
from memory.ports import LLMPort
from memory.retention import RetentionPolicy
from memory.storage import Database
from memory.topics.cache import PackRules
from memory.topics.check import TopicCheck, TopicCheckSettings
from tasks import JobRunner
from tasks.forgetting import forgetting_job
from tasks.history_redigest import HistoryRedigestJob, RedigestSettings
from tasks.topic_check import topic_check_job


def topic_check_settings(settings: Settings) -> TopicCheckSettings:
    t = settings.topics
    return TopicCheckSettings(
        batch_size=t.batch_size,
        max_wait=timedelta(minutes=t.max_wait_minutes),
        min_messages=t.min_messages,
        quiet_after=timedelta(minutes=t.pack_after_quiet_minutes) if t.pack_after_quiet_minutes else None,
        keep_batches_without_bot=t.keep_batches_without_bot,
        pack=PackRules(idle_checks=t.pack_after_idle_checks, max_fragments=t.pack_after_fragments),
        title_merge_ratio=t.title_merge_ratio,
        reuse_similarity=t.reuse_similarity,
        attach_gap=timedelta(minutes=t.attach_gap_minutes),
        reuse_gap=timedelta(minutes=t.reuse_max_gap_minutes),
        short_thread=t.short_thread,
        use_llm=t.llm_topics,
        max_batches_per_run=t.max_batches_per_run,
        disentangle=t.disentangle.params(),
        pack_options=PackOptions(
            use_llm=t.llm_summary, keyword_method=t.keywords, min_topic_messages=t.min_topic_messages
        ),
    )


def redigest_settings(settings: Settings) -> RedigestSettings:
    """The re-digest job's settings from `[topics]`."""
    t = settings.topics
    return RedigestSettings(
        enabled=t.enabled and t.llm_summary,
        per_run=t.redigest_per_run,
        interval=timedelta(minutes=t.interval_minutes),
        keyword_method=t.keywords,
    )


def forget_policy(settings: Settings) -> tuple[ForgetPolicy, Scope]:
    f = settings.forgetting
    stages = tuple(
        Stage(i, timedelta(minutes=age), share)
        for i, (age, share) in enumerate(zip(f.stage_ages_minutes, f.stage_shares, strict=True), start=1)
    )
    return ForgetPolicy(stages, f.small_cohort, f.min_cohort, f.seed), f.scope


def retention_policy(settings: Settings) -> RetentionPolicy:
    """The `[retention]` settings as the domain's policy (0 days: kept forever)."""
    r = settings.retention

    def keep(days: float) -> timedelta | None:
        return timedelta(days=days) if days > 0 else None

    keep_days = {"llm_usage": keep(r.llm_usage_days), "forget_log": keep(r.forget_log_days)}
    return RetentionPolicy(keep_days, r.batch)


def topic_check(db: Database, current: Callable[[], Settings], llm: LLMPort | None) -> TopicCheck:
    """A TopicCheck that reads the settings in force at each run."""
    return TopicCheck(db, lambda: topic_check_settings(current()), llm)


def register_history_jobs(
    runner: JobRunner, db: Database, current: Callable[[], Settings], llm: LLMPort | None
) -> TopicCheck:
    """Register the topic-check, re-digest and forgetting jobs (the last also applies `[retention]`);
    all follow config reloads (cadence included)."""
    check = topic_check(db, current, llm)
    runner.register(
        topic_check_job(
            check,
            lambda: timedelta(minutes=current().topics.interval_minutes),
            lambda: current().topics.enabled,
        )
    )
    runner.register(HistoryRedigestJob(db, lambda: redigest_settings(current()), llm).spec())
    runner.register(
        forgetting_job(
            db,
            lambda: forget_policy(current()) if current().forgetting.enabled else None,
            lambda: timedelta(minutes=current().forgetting.interval_minutes),
            lambda: retention_policy(current()),
        )
    )
    return check
