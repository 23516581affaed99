"""The typed settings tree. Every table of config.toml is a model here; unknown keys are errors."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from adapters.discord.config import DiscordConfig
from adapters.onebot_v11.config import OneBotConfig
from adapters.playground.config import PlaygroundConfig
from adapters.telegram.config import TelegramConfig
from bot.llm.settings import LLMSettings
from bot.web.security import check_host
from memory.embeddings.factory import EmbedderKind
from memory.recall.settings import RecallSettings as _RecallDefaults
from memory.recall.settings import RecallWeights as _WeightDefaults
from memory.recall.timeexpr import LOCAL_ZONE, NumericDateOrder, in_zone
from memory.topics.params import DisentangleParams

_W = _WeightDefaults()
_R = _RecallDefaults()


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StorageSettings(Section):
    data_dir: str = "data"
    busy_timeout_ms: int = Field(10_000, ge=100, le=600_000)

    @field_validator("data_dir")
    @classmethod
    def _names_a_folder(cls, data_dir: str) -> str:
        # "" silently meant the working directory: the database and notes landed wherever the bot started
        if not data_dir.strip():
            raise PydanticCustomError(
                "empty_data_dir", 'empty; name a folder ("." for the working directory)'
            )
        return data_dir


class BotSettings(Section):
    name: str = Field("群忆", min_length=1)
    self_id: str = Field("bot", min_length=1)
    aliases: list[str] = ["群忆", "qunyi"]
    timezone: str = Field(LOCAL_ZONE, min_length=1)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, zone: str) -> str:
        in_zone(datetime.now(UTC), zone)
        return zone


class ReplySettings(Section):
    enabled: bool = True
    on_mention: bool = True
    on_reply: bool = True
    on_name: bool = True
    keywords: list[str] = []
    probability: float = Field(0.0, ge=0.0, le=1.0)
    disabled_chats: list[str] = []
    commands: bool = True
    # A member's memory commands in one chat: at most `commands_per_member` in any
    # `commands_window_seconds` (0 = no limit); each one is a recall, maybe an embedding call.
    commands_per_member: int = Field(5, ge=0, le=1000)
    commands_window_seconds: float = Field(60.0, ge=1.0, le=86_400.0)
    max_chars: int = Field(2000, ge=50, le=100_000)


class MessagesSettings(Section):
    follow_deletions: bool = True
    follow_edits: bool = True


class ContextSettings(Section):
    total_tokens: int = Field(2000, ge=200, le=200_000)
    recent_messages: int = Field(20, ge=0, le=500)
    recent_tokens: int = Field(800, ge=0, le=100_000)
    recall_tokens: int = Field(600, ge=0, le=100_000)
    recall_limit: int = Field(8, ge=0, le=100)


class RecallWeightsSettings(Section):
    """Fusion, signal and salience weights of recall (a signal multiplies by 1 + weight × strength)."""

    rrf_k: float = Field(_W.rrf_k, gt=0.0, le=1000.0)
    lexical: float = Field(_W.lexical, ge=0.0, le=10.0)
    dense: float = Field(_W.dense, ge=0.0, le=10.0)
    window: float = Field(_W.window, ge=0.0, le=10.0)
    history: float = Field(_W.history, ge=0.0, le=10.0)
    preference: float = Field(_W.preference, ge=0.0, le=10.0)
    time_window: float = Field(_W.time_window, ge=0.0, le=10.0)
    quote: float = Field(_W.quote, ge=0.0, le=10.0)
    person_fill: float = Field(_W.person_fill, ge=0.0, le=10.0)
    jargon: float = Field(_W.jargon, ge=0.0, le=10.0)
    feedback: float = Field(_W.feedback, ge=0.0, le=10.0)
    feedback_docs: int = Field(_W.feedback_docs, ge=2, le=100)
    feedback_terms: int = Field(_W.feedback_terms, ge=0, le=50)
    context_spread: float = Field(_W.context_spread, ge=0.0, le=1.0)
    keyword_overlap: float = Field(_W.keyword_overlap, ge=0.0, le=10.0)
    quoted_phrase: float = Field(_W.quoted_phrase, ge=0.0, le=10.0)
    person: float = Field(_W.person, ge=0.0, le=10.0)
    time: float = Field(_W.time, ge=0.0, le=10.0)
    reinforcement: float = Field(_W.reinforcement, ge=0.0, le=10.0)
    recency_half_life_days: float = Field(_W.recency_half_life_days, ge=0.0, le=36500.0)
    recency_floor: float = Field(_W.recency_floor, ge=0.0, le=1.0)


class RecallSettings(Section):
    """Scope, embedder and ranking of the one recall used by replies, /recall and the eval."""

    scope: Literal["chat", "global"] = "chat"
    global_blacklist: list[str] = []
    global_private: bool = False
    per_person_cross_chat: list[str] = []
    embedder: EmbedderKind = "none"
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    embed_timeout_seconds: float = Field(30.0, gt=0.0, le=600.0)
    query_embed_timeout_seconds: float = Field(2.0, gt=0.0, le=60.0)
    backfill_interval_seconds: float = Field(60.0, ge=1.0, le=86_400.0)
    backfill_batch: int = Field(256, ge=1, le=10_000)
    candidates: int = Field(_R.candidates, ge=10, le=5000)
    fusion: Literal["rrf", "score"] = _R.fusion
    stems: bool = True
    rerank: bool = False
    rerank_top: int = Field(20, ge=2, le=100)
    rerank_timeout_seconds: float = Field(10.0, gt=0.0, le=300.0)
    numeric_date_order: NumericDateOrder = _R.numeric_date_order
    weights: RecallWeightsSettings = RecallWeightsSettings()

    @model_validator(mode="after")
    def _openai_endpoint(self) -> RecallSettings:
        if self.embedder == "openai":
            missing = [key for key in ("base_url", "model") if not getattr(self, key).strip()]
            if missing:
                raise ValueError(f'embedder = "openai" needs {" and ".join(missing)}')
        return self


class NotesSettings(Section):
    hints: int = Field(5, ge=0, le=50)
    hints_tokens: int = Field(80, ge=0, le=2000)


class JargonSettings(Section):
    """`[jargon]`: mining cadence, dictionary scope, inference thresholds, explanation budget."""

    enabled: bool = True
    cooldown_seconds: float = Field(20.0, ge=1.0, le=86_400.0)
    min_new_messages: int = Field(10, ge=1, le=10_000)
    history_messages: int = Field(3000, ge=10, le=100_000)
    max_window_messages: int = Field(500, ge=10, le=10_000)
    scope: Literal["global", "chat"] = "global"
    extractor: Literal["offline", "llm"] = "offline"
    thresholds: list[int] = Field(default_factory=lambda: [2, 4, 8, 12, 24, 60, 100], min_length=1)
    max_batch: int = Field(30, ge=1, le=1000)
    max_evidence: int = Field(20, ge=1, le=1000)
    inferences_per_run: int = Field(20, ge=0, le=1000)
    context_tokens: int = Field(200, ge=0, le=10_000)
    min_df: int = Field(3, ge=2, le=1000)
    min_speakers: int = Field(2, ge=1, le=100)
    min_lift: float = Field(11.0, ge=0.0, le=50.0)
    max_candidates: int = Field(20, ge=1, le=1000)

    @field_validator("thresholds")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if any(t < 1 for t in value) or any(b <= a for a, b in pairwise(value)):
            raise ValueError("thresholds must be positive and strictly increasing")
        return value


class ToolsSettings(Section):
    enabled: bool = True
    max_rounds: int = Field(3, ge=0, le=10)
    time_limit_seconds: float = Field(30.0, gt=0.0, le=600.0)
    call_time_limit_seconds: float = Field(10.0, gt=0.0, le=120.0)


class SchedulerSettings(Section):
    config_watch_seconds: float = Field(5.0, ge=0.0, le=3600.0)
    shutdown_grace_seconds: float = Field(10.0, ge=0.0, le=600.0)


class ConsoleSettings(Section):
    chat: str = Field("console", min_length=1)
    chat_name: str = "Console group"
    user: str = Field("me", min_length=1)


AdapterName = Literal["console", "onebot_v11", "telegram", "discord", "playground"]


class AdaptersSettings(Section):
    enabled: list[AdapterName] = ["console"]
    console: ConsoleSettings = ConsoleSettings()
    onebot_v11: OneBotConfig = OneBotConfig()
    telegram: TelegramConfig | None = None
    discord: DiscordConfig | None = None
    playground: PlaygroundConfig = PlaygroundConfig()

    @field_validator("enabled")
    @classmethod
    def _once_each(cls, enabled: list[AdapterName]) -> list[AdapterName]:
        """One adapter per name: a name listed twice started two adapters on one port or one stdin
        (the second failing to bind, or each reading half the lines) and recorded a platform twice."""
        twice = sorted({name for name in enabled if enabled.count(name) > 1})
        if twice:
            raise ValueError(
                f"{', '.join(repr(n) for n in twice)} listed more than once; name each adapter once"
            )
        return enabled

    @model_validator(mode="after")
    def _configured(self) -> AdaptersSettings:
        for name in ("telegram", "discord"):
            if name in self.enabled and getattr(self, name) is None:
                raise ValueError(
                    f"adapter {name!r} is enabled but [adapters.{name}] (with its token) is missing"
                )
        return self


class PersonsSettings(Section):
    person_name_max_chars: int = Field(16, ge=2, le=64)
    alias_sources: list[Literal["nickname", "card", "self", "others", "llm", "admin"]] = [
        "nickname",
        "card",
        "self",
        "others",
    ]
    self_declared_rename: bool = True
    consolidation_interval_seconds: float = Field(300.0, ge=1.0, le=86_400.0)
    consolidation_batch: int = Field(500, ge=1, le=100_000)
    use_llm: bool = True
    relearn_per_run: int = Field(5, ge=0, le=100)
    forget_removes_messages: bool = False
    pronoun_max_age_seconds: float = Field(3600.0, ge=0.0, le=2_592_000.0)
    card_max_chars: int = Field(240, ge=20, le=4000)
    card_tokens: int = Field(400, ge=0, le=20_000)
    max_cards: int = Field(4, ge=0, le=20)
    mention_min_confidence: float = Field(0.6, ge=0.0, le=1.0)


class LoggingSettings(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class DisentangleSettings(Section):
    """The offline topic assignment (online thread disentanglement); defaults are the evaluated ones."""

    max_candidates: int = Field(80, ge=1, le=1000)
    max_gap_minutes: float = Field(60.0, gt=0.0, le=10_080.0)
    reply_memory: int = Field(2000, ge=10, le=100_000)
    idf_vocab: int = Field(5000, ge=100, le=1_000_000)
    max_words: int = Field(48, ge=1, le=1000)
    min_name_chars: int = Field(2, ge=1, le=32)
    new_thread_bias: float = Field(0.0, ge=-20.0, le=20.0)
    trust_reply_links: bool = True
    system_new_thread: bool = True

    def params(self) -> DisentangleParams:
        return DisentangleParams(**self.model_dump())


class TopicsSettings(Section):
    """The topic check (new messages → cached topics) and packing topics into ChatHistory."""

    enabled: bool = True
    interval_minutes: float = Field(5.0, gt=0.0, le=1440.0)
    batch_size: int = Field(80, ge=2, le=1000)
    max_wait_minutes: float = Field(480.0, gt=0.0, le=100_000.0)
    min_messages: int = Field(20, ge=1, le=1000)
    pack_after_quiet_minutes: float = Field(1440.0, ge=0.0, le=525_600.0)
    keep_batches_without_bot: bool = True
    pack_after_idle_checks: int = Field(3, ge=1, le=100)
    pack_after_fragments: int = Field(5, ge=1, le=100)
    title_merge_ratio: float = Field(0.9, ge=0.5, le=1.0)
    reuse_similarity: float = Field(0.3, ge=0.0, le=1.0)
    attach_gap_minutes: float = Field(10.0, ge=0.0, le=1440.0)
    reuse_max_gap_minutes: float = Field(1440.0, gt=0.0, le=525_600.0)
    short_thread: int = Field(3, ge=1, le=100)
    min_topic_messages: int = Field(2, ge=1, le=100)
    keywords: Literal["tfidf", "textrank"] = "tfidf"
    llm_topics: bool = False
    llm_summary: bool = False
    redigest_per_run: int = Field(5, ge=0, le=100)
    max_batches_per_run: int = Field(4, ge=1, le=100)
    disentangle: DisentangleSettings = DisentangleSettings()


StageAge = Annotated[float, Field(ge=0.0, le=525_600.0)]
"""One forgetting stage's age in minutes: up to a year (a NaN, infinite or larger age is refused)."""


class ForgettingSettings(Section):
    """MaiBot's four-stage, count-based forgetting of ChatHistory rows."""

    enabled: bool = True
    interval_minutes: float = Field(5.0, gt=0.0, le=1440.0)
    stage_ages_minutes: list[StageAge] = Field([30.0, 480.0, 2880.0, 10080.0], min_length=1, max_length=10)
    stage_shares: list[float] = Field([0.25, 0.07, 0.05, 0.02], min_length=1, max_length=10)
    small_cohort: Literal["faithful", "round_up", "wait"] = "faithful"
    min_cohort: int = Field(0, ge=0, le=100_000)
    scope: Literal["global", "chat"] = "global"
    seed: int = 0

    @model_validator(mode="after")
    def _stages_match(self) -> ForgettingSettings:
        if len(self.stage_ages_minutes) != len(self.stage_shares):
            raise ValueError("stage_ages_minutes and stage_shares need one value per stage")
        if any(not 0.0 <= s <= 0.5 for s in self.stage_shares):
            raise ValueError("stage_shares must each be within 0.0–0.5")
        return self


class RetentionSettings(Section):
    """`[retention]`: how long bookkeeping rows that are not memory are kept (0 = forever), pruned a
    bounded batch at a time by the forgetting job."""

    llm_usage_days: float = Field(30.0, ge=0.0, le=36_500.0)
    forget_log_days: float = Field(180.0, ge=0.0, le=36_500.0)
    batch: int = Field(5000, ge=1, le=1_000_000)


class WebSettings(Section):
    """`[web]`: the admin web console (`qunyi web`). Loopback only unless `allow_remote`."""

    host: str = Field("127.0.0.1", min_length=1)
    port: int = Field(8765, ge=1, le=65_535)
    token: str = Field("", repr=False)
    allow_remote: bool = False

    @model_validator(mode="after")
    def _loopback(self) -> WebSettings:
        check_host(self.host, self.allow_remote)
        return self


class Settings(Section):
    """The whole configuration."""

    storage: StorageSettings = StorageSettings()
    bot: BotSettings = BotSettings()
    reply: ReplySettings = ReplySettings()
    messages: MessagesSettings = MessagesSettings()
    context: ContextSettings = ContextSettings()
    recall: RecallSettings = RecallSettings()
    llm: LLMSettings = LLMSettings()
    notes: NotesSettings = NotesSettings()
    jargon: JargonSettings = JargonSettings()
    tools: ToolsSettings = ToolsSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    adapters: AdaptersSettings = AdaptersSettings()
    persons: PersonsSettings = PersonsSettings()
    logging: LoggingSettings = LoggingSettings()
    topics: TopicsSettings = TopicsSettings()
    forgetting: ForgettingSettings = ForgettingSettings()
    retention: RetentionSettings = RetentionSettings()
    web: WebSettings = WebSettings()
