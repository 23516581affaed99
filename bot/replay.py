"""`qunyi replay`: a chat log fed through exactly the live pipeline, with the daemons on simulated time."""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from adapters.importers import ImportIssue, IssueKind
from adapters.importers.base import id_clash
from adapters.importers.replay_jsonl import iter_messages
from bot.app import App
from bot.reply.pipeline import ERASED, ID_CLASH
from memory.clock import ManualClock, from_wrong_clock
from memory.storage import DatabaseLocked
from memory.types import ChatKind, ChatMessage

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ReplayReport:
    messages: int = 0
    recorded: int = 0
    duplicates: int = 0
    erased: int = 0  # not recorded: their senders had their messages up to then deleted on request
    replies: list[tuple[str, str]] = field(default_factory=list)
    problems: list[ImportIssue] = field(default_factory=list)
    job_runs: dict[str, int] = field(default_factory=dict)


def replay_clock() -> ManualClock:
    """The simulated clock of a replay: it starts before any message and `replay` moves it to each
    message's time (a ManualClock only moves forward), so nothing needs to read the log first."""
    return ManualClock(datetime(1970, 1, 1, tzinfo=UTC))


class ReplaySender:
    """The outbound seam during a replay: the bot's answers become messages at simulated time."""

    def __init__(self, clock: ManualClock, bot_id: str, bot_name: str, platform: str) -> None:
        self.clock = clock
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.platform = platform
        self._ids = itertools.count(1)

    async def send(
        self, chat_id: str, text: str, *, chat_kind: ChatKind = ChatKind.GROUP, reply_to: str | None = None
    ) -> ChatMessage:
        message_id = f"qunyi-reply-{next(self._ids)}"
        return ChatMessage.outgoing(
            self.platform,
            chat_id,
            message_id,
            self.bot_id,
            self.bot_name,
            text,
            self.clock.now(),
            chat_kind,
            reply_to,
        )


def as_seen_by_bot(message: ChatMessage, bot_id: str) -> ChatMessage:
    """A logged message from the bot's own id is the bot's; one that mentions it addresses it."""
    is_bot = message.sender_id == bot_id
    to_bot = message.to_bot or bot_id in message.mentions
    if is_bot == message.is_bot and to_bot == message.to_bot:
        return message
    return dataclasses.replace(message, is_bot=is_bot, to_bot=to_bot)


async def _kind_clash(app: App, kinds: dict[str, ChatKind], message: ChatMessage) -> str | None:
    """Why `message` cannot be replayed as its `chat_kind` says (its chat is of the other kind, earlier
    in the log or in memory, as the playground refuses such a post with a 409), or None; `kinds` holds
    the kind of each chat of the log met so far."""
    kind = kinds.get(message.chat_id)
    if kind is None:
        kind = await app.memory.chat_kind(message.platform, message.chat_id) or message.chat_kind
        kinds[message.chat_id] = kind
    if kind is message.chat_kind:
        return None
    return f"chat {message.chat_id!r} is a {kind.value} chat, this line says {message.chat_kind.value}"


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


async def replay(
    app: App,
    clock: ManualClock,
    path: Path,
    platform: str = "replay",
    settle: timedelta = timedelta(hours=1),
    on_progress: Callable[[], None] | None = None,
    on_problem: Callable[[ImportIssue], None] | None = None,
) -> ReplayReport:
    """Feed every line of `path` in order; before each message, move the clock to its time (unless it
    is from a wrong clock, `from_wrong_clock`: the message is recorded as dated, the clock stays) and run
    the jobs whose turn has come."""
    settings = app.settings
    sender = ReplaySender(clock, settings.bot.self_id, settings.bot.name, platform)
    report = ReplayReport()
    bot_id = settings.bot.self_id

    def problem(issue: ImportIssue) -> None:
        report.problems.append(issue)
        if on_problem:
            on_problem(issue)

    timed = False  # whether a message has set the clock yet (a ManualClock starts at 1970)
    kinds: dict[str, ChatKind] = {}
    for item in iter_messages(path, platform=platform):
        if on_progress:
            on_progress()
        if isinstance(item, ImportIssue):
            problem(item)
            continue
        if clash := await _kind_clash(app, kinds, item):
            problem(ImportIssue(str(path), f"message {item.message_id}", clash))
            continue
        report.messages += 1
        item = as_seen_by_bot(item, bot_id)
        if from_wrong_clock(item.time):  # a line dated 8999 moved the clock there for the rest of the replay
            log.warning(
                "message %s of %s is dated %s, past the wall clock: the replay's clock %s",
                item.message_id,
                item.chat_id,
                item.time.isoformat(),
                f"stays at {clock.now().isoformat()}" if timed else "is left unset",
            )
        else:
            clock.set(item.time)
            timed = True
        await app.runner.run_due(clock.now())
        try:
            outcome = await app.pipeline.handle(item, sender.send)
        except DatabaseLocked:
            raise  # every later message would meet the same lock: stop, replaying again adds the rest
        except Exception as exc:  # as the live bot does: log it and go on with the next message
            log.exception("handling message %s of %s failed", item.message_id, item.chat_id)
            problem(
                ImportIssue(
                    str(path), f"message {item.message_id}", f"handling failed: {exc}", IssueKind.FAILED
                )
            )
            continue
        if outcome.recorded:
            report.recorded += 1
        elif outcome.reason == ID_CLASH:
            problem(id_clash(str(path), item))
        elif outcome.reason == ERASED:
            report.erased += 1
        else:
            report.duplicates += 1
        if outcome.reply:
            report.replies.append((item.text, outcome.reply))
    end = clock.now() + settle
    step = timedelta(minutes=5)
    await app.runner.run_all()
    while clock.now() < end:
        clock.advance(step)
        await app.runner.run_due(clock.now())
    report.job_runs = dict(app.runner.runs)
    return report
