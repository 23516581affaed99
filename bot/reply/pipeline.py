"""Flow 1 of the design: message in → record → command or reply policy → context → LLM → send → record."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from adapters.base import SendError, fit_message
from bot import unrecorded
from bot.commands import answers
from bot.commands.dispatch import answer, command_for
from bot.config.settings import Settings
from bot.llm import LLMGateway
from bot.reply.policy import decide, silenced, without_bot_names
from bot.reply.prompt import reply_messages
from bot.tools import ToolContext, build_registry, run_with_tools
from bot.tools.service_backend import ServiceMemoryTools
from memory import messages
from memory.commands import MemoryCommand
from memory.ingest import Recorded
from memory.ports import LLMUnavailable
from memory.rate_limit import RateLimit, Rule
from memory.service import MemoryService
from memory.storage import DatabaseLocked
from memory.types import ChatMessage, MembershipChange, MessageDeletion

log = logging.getLogger(__name__)

ID_CLASH = "id clash"  # the outcome's reason when the id was taken by another text
ERASED = "erased on request"  # the outcome's reason when its sender's messages up to then were deleted
LOCKED_RETRY_SECONDS = 1.0  # pause before a message that met a locked database is tried again
OVER_LIMIT = "over the command limit"  # the outcome's reason for a command left unanswered by the limit

Send = Callable[..., Awaitable[ChatMessage]]
Store = Callable[[ChatMessage, bool], Awaitable[Recorded]]  # MemoryService.record, or one that waits
Done = TypeVar("Done")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What handling one message did."""

    recorded: bool
    reply: str | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Pending:
    """A live message recorded, its answer not yet worked out: `respond()` does it (then the message
    is handled, as `handle_live` would have); `chat_id` is the database id of its chat."""

    chat_id: int
    respond: Callable[[], Awaitable[Outcome | None]]


class ReplyPipeline:
    """Handles every incoming message the same way, live or replayed."""

    def __init__(
        self,
        memory: MemoryService,
        settings: Callable[[], Settings],
        llm: LLMGateway | None = None,
        rng: random.Random | None = None,
        seconds: Callable[[], float] = time.monotonic,
    ) -> None:
        """`seconds` is the clock (in seconds) the members' command limit counts on."""
        self.memory = memory
        self.settings = settings
        self.llm = llm
        self.rng = rng or random.Random(0)
        self.command_limit = RateLimit(self._command_rule, seconds)

    def _command_rule(self) -> Rule:
        reply = self.settings().reply
        return Rule(reply.commands_per_member, reply.commands_window_seconds)

    async def handle(self, message: ChatMessage, send: Send) -> Outcome:
        """Record `message`, then answer it when it is a memory command or the reply policy says so,
        and record the answer sent. One attempt: a locked database raises DatabaseLocked."""
        if ignored := self._ignored(message):
            return ignored
        recorded = await self.memory.record(message)
        return await self._respond(message, recorded, send, self.memory.record)

    async def handle_deletion(self, deletion: MessageDeletion) -> bool:
        """Forget a message its platform deleted, unless `[messages] follow_deletions` is off; True when
        a stored message was removed. One attempt: a locked database raises DatabaseLocked."""
        if not self.settings().messages.follow_deletions:
            return False
        removed = await self.memory.delete(deletion)
        if removed:
            log.info(
                "message %s of %s deleted on the platform: forgotten", deletion.message_id, deletion.chat_id
            )
        return removed

    async def handle_membership(self, change: MembershipChange) -> int:
        """Mark a member who left a chat, or end the mark when they joined again
        (`MemoryService.change_membership`); how many memberships changed. One attempt: a locked
        database raises DatabaseLocked."""
        changed = await self.memory.change_membership(change)
        if changed:
            log.info(
                "%s %s %s at %s: %d membership(s) changed",
                change.platform,
                change.user_id,
                change.what,
                change.time.isoformat(),
                changed,
            )
        return changed

    async def handle_inbound(
        self, event: ChatMessage | MessageDeletion | MembershipChange, send: Send, stopping: asyncio.Event
    ) -> None:
        """What a live adapter delivers: a message (`handle_live`), a deletion or a member leaving or
        joining, for which a locked database is waited out in the same way."""
        if isinstance(event, ChatMessage):
            await self.handle_live(event, send, stopping)
            return
        if isinstance(event, MembershipChange):
            what = f"{event.platform} {event.user_id} {event.what}"
            try:
                await while_locked(lambda: self.handle_membership(event), what, stopping)
            except DatabaseLocked as exc:
                log.error("%s not applied: %s", what, exc)
            return
        try:
            await _while_locked(lambda: self.handle_deletion(event), event, stopping)
        except DatabaseLocked as exc:
            log.error("deletion of %s in %s not applied: %s", event.message_id, event.chat_id, exc)

    def _ignored(self, message: ChatMessage) -> Outcome | None:
        if message.edited and not self.settings().messages.follow_edits:
            return Outcome(False, reason="edit not followed")
        return None

    async def _respond(
        self, message: ChatMessage, recorded: Recorded, send: Send, store: Store, *, live: bool = False
    ) -> Outcome:
        """Everything after `message` was recorded; `store` records the bot's own message sent. A `live`
        answer is worked out in the chat the message is in now: it may wait while its chat moves (a
        Telegram group upgraded to a supergroup), and the old chat is then gone. A replayed message is
        answered right after it is recorded, so it is not looked up again."""
        if not recorded.created:
            return Outcome(
                False, reason=ID_CLASH if recorded.clash else ERASED if recorded.erased else "duplicate"
            )
        if message.is_bot:
            return Outcome(True, reason="own message")
        if message.edited:
            return Outcome(True, reason="edited")
        sent_to = recorded  # where it was recorded: `_send` tells from it whether the chat moved since
        if live and (now := await self._chat_now(recorded)) is not None:
            recorded = replace(recorded, chat_id=now.chat_id)
        settings = self.settings()
        # a forward re-shares someone else's words: `/recall …` forwarded is a message, not a command
        if settings.reply.commands and not message.forwarded and silenced(message, settings.reply) is None:
            command = command_for(message.text, to_bot=message.to_bot)
            if command is not None:
                return await self._command(message, recorded, sent_to, command, send, store)
        replied_to_bot = await self._replied_to_bot(recorded.chat_id, recorded.message.reply_to)
        decision = decide(message, settings.reply, settings.bot, replied_to_bot, self.rng)
        if not decision.reply:
            return Outcome(True, reason=decision.reason)
        if self.llm is None or not self.llm.available("reply"):
            log.debug(
                "addressed (%s) in %s but the reply model is off; staying quiet",
                decision.reason,
                message.chat_id,
            )
            return Outcome(True, reason=f"{decision.reason}; no reply model")
        async with self.memory.db.read() as session:
            found = await messages.by_ids(session, [recorded.message_id])
        if not found:  # deleted on the platform while its answer waited for the chat's earlier ones
            return Outcome(True, reason=f"{decision.reason}; deleted before the answer")
        stored = found[0]
        question = without_bot_names(stored.text, settings.bot)
        context = await self.memory.context_for_reply(recorded.chat_id, stored, question)
        speaker = await self.memory.speaker_name(recorded.chat_id, stored)
        prompt = reply_messages(settings.bot.name, context, speaker, message.text)
        try:
            text = await self._answer(
                self.llm,
                recorded.chat_id,
                prompt,
                settings,
                set(context.shown("history")),
                recorded.person_id or None,
            )
        except LLMUnavailable as exc:
            log.warning("no reply: %s", exc.reason)
            return Outcome(True, reason=f"{decision.reason}; {exc.reason}")
        text = text.strip()
        if not text:
            return Outcome(True, reason=f"{decision.reason}; empty reply")
        return await self._send(message, sent_to, text, send, store, decision.reason)

    async def _command(
        self,
        message: ChatMessage,
        recorded: Recorded,
        sent_to: Recorded,
        command: MemoryCommand,
        send: Send,
        store: Store,
    ) -> Outcome:
        """Answer a memory command (`sent_to` as for `_send`), unless its sender is over `[reply]
        commands_per_member` in this chat: then the first command past the limit is answered with when
        to ask again, and the next ones with nothing until the window has room (never the reply model
        either: the command stays a command). A command is counted once its answer is worked out, and
        the note marked told once written, so that one tried again after meeting a locked database is
        neither counted twice nor left without its note."""
        chat_id, member = recorded.chat_id, (recorded.chat_id, message.sender_id)
        verdict = self.command_limit.check(member)
        if verdict.allowed:
            worked_out = await answer(self.memory, chat_id, command, asker=recorded.person_id or None)
            self.command_limit.add(member)
            reason = "command"
        elif verdict.first:
            worked_out = await answers.slow_down(self.memory, chat_id, command.argument, verdict.wait_seconds)
            self.command_limit.told(member)
            reason = OVER_LIMIT
        else:
            return Outcome(True, reason=OVER_LIMIT)
        return await self._send(message, sent_to, worked_out.text, send, store, reason, searchable=False)

    async def handle_live(self, message: ChatMessage, send: Send, stopping: asyncio.Event) -> Outcome | None:
        """`handle` for a live adapter, which cannot fetch a message again: while another process
        holds the database past its busy timeout, the message waits and is tried again (recording is
        idempotent) until it is stored or the bot is stopping; so does the bot's own answer once sent,
        and an answer whose preparation met the lock (nothing sent yet) is prepared again. None when
        the message could not be handled."""
        recorded = await self.record_live(message, send, stopping)
        return await recorded.respond() if isinstance(recorded, Pending) else recorded

    async def record_live(
        self, message: ChatMessage, send: Send, stopping: asyncio.Event
    ) -> Pending | Outcome | None:
        """The first half of `handle_live`: `message` recorded, and its answer still to work out
        (`Pending`); an Outcome when it was not recorded, None when it could not be."""
        if ignored := self._ignored(message):
            return ignored

        async def store(item: ChatMessage, searchable: bool = True) -> Recorded:
            try:
                return await _while_locked(lambda: self.memory.record(item, searchable), item, stopping)
            except DatabaseLocked:
                # Stopping with the database still held: the adapter cannot fetch it again.
                kept = await asyncio.to_thread(unrecorded.keep, self.memory.db.path.parent, item, searchable)
                log.error(
                    "message %s of %s kept in %s: stored at the next start",
                    item.message_id,
                    item.chat_id,
                    kept,
                )
                raise

        try:
            recorded = await store(message)
        except DatabaseLocked as exc:
            log.error("message %s of %s not handled: %s", message.message_id, message.chat_id, exc)
            return None

        async def respond() -> Outcome | None:
            try:
                answer = functools.partial(self._respond, message, recorded, send, store, live=True)
                return await _while_locked(answer, message, stopping)
            except DatabaseLocked as exc:
                log.error("message %s of %s not answered: %s", message.message_id, message.chat_id, exc)
                return None

        return Pending(recorded.chat_id, respond)

    async def _answer(
        self,
        llm: LLMGateway,
        chat_id: int,
        prompt: list[dict[str, Any]],
        settings: Settings,
        counted: set[int],
        asker: int | None,
    ) -> str:
        """The reply text, with tool rounds when enabled; `counted` are the topics the context
        reinforced already, which the model's own recalls do not count again; `asker` is the person
        answered, whose cross-chat permission the model's recalls follow."""
        key = await self.memory.chat_key(chat_id)
        if (
            not settings.tools.enabled
            or settings.tools.max_rounds == 0
            or key is None
            or self.memory.notes is None
        ):
            return await llm.complete_text("reply", prompt)

        async def chat(history: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
            return (await llm.chat("reply", history, tools)).as_message()

        ctx = ToolContext(
            key,
            self.memory.notes.for_chat(key),
            ServiceMemoryTools(self.memory, counted=counted, asker=asker),
            writable=True,
        )
        registry = build_registry(settings.tools.call_time_limit_seconds)
        result = await run_with_tools(
            chat,
            prompt,
            registry,
            ctx,
            max_rounds=settings.tools.max_rounds,
            time_limit=settings.tools.time_limit_seconds,
        )
        if result.calls:
            log.info("reply in %s used tools: %s", key, ", ".join(name for name, _ in result.calls))
        return result.text

    async def _send(
        self,
        message: ChatMessage,
        recorded: Recorded,
        text: str,
        send: Send,
        store: Store,
        reason: str,
        searchable: bool = True,
    ) -> Outcome:
        """Send `text` in answer to `message` (`recorded` as it was recorded; cut at `[reply] max_chars`,
        between whole graphemes, with `…`) and record it as sent; a platform refusing it (muted, kicked,
        disconnected) is logged and only the answer is lost. When its chat was merged into another since
        it was recorded (the platform moved the chat), the answer goes to that chat, replying to nothing
        (the old chat's message ids mean nothing there); it is dropped, with a warning, when that chat
        is on another platform."""
        chat_id = message.chat_id
        reply_to: str | None = message.message_id
        now = await self._chat_now(recorded)
        if now is not None and now.chat_id != recorded.chat_id:
            moved = f"{now.platform}:{now.platform_chat_id}"
            if now.platform != message.platform:
                log.warning(
                    "answer to message %s of %s not sent: its chat was merged into %s meanwhile, which "
                    "the %s adapter cannot reach",
                    message.message_id,
                    message.chat_id,
                    moved,
                    message.platform,
                )
                return Outcome(True, reason=f"{reason}; not sent: the chat was merged into {moved}")
            log.info("answer to message %s of %s goes to %s, where its chat moved", reply_to, chat_id, moved)
            chat_id, reply_to = now.platform_chat_id, None
        text = fit_message(text, self.settings().reply.max_chars, chat_id)
        try:
            sent = await send(chat_id, text, chat_kind=message.chat_kind, reply_to=reply_to)
        except SendError as exc:
            log.warning("answer to message %s of %s not sent: %s", message.message_id, message.chat_id, exc)
            return Outcome(True, reason=f"{reason}; not sent: {exc}")
        await store(sent, searchable)
        return Outcome(True, text, reason)

    async def _chat_now(self, recorded: Recorded) -> messages.ChatNow | None:
        async with self.memory.db.read() as session:
            return await messages.chat_of(session, recorded.message_id)

    async def _replied_to_bot(self, chat_id: int, reply_to: str | None) -> bool:
        if reply_to is None:
            return False
        async with self.memory.db.read() as session:
            target = await messages.by_platform_id(session, chat_id, reply_to)
        return target is not None and target.is_bot


async def _while_locked(
    step: Callable[[], Awaitable[Done]], message: ChatMessage | MessageDeletion, stopping: asyncio.Event
) -> Done:
    return await while_locked(step, f"message {message.message_id} of {message.chat_id}", stopping)


async def while_locked(step: Callable[[], Awaitable[Done]], what: str, stopping: asyncio.Event) -> Done:
    """`step()`, done again after a pause each time it meets a locked database, until `stopping`
    (then the DatabaseLocked is raised); `what` names the step in the log."""
    while True:
        try:
            return await step()
        except DatabaseLocked as exc:
            if stopping.is_set():
                raise
            log.warning("%s; %s will be tried again", exc, what)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), LOCKED_RETRY_SECONDS)
