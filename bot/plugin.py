"""Qunyi inside another bot: a program that already speaks to its platform (a nonebot2, aiogram or
discord.py bot) embeds Qunyi's memory, jobs and memory commands in its own process and event loop.

    qunyi = QunyiPlugin("telegram", send, config=Path("config.toml"))
    await qunyi.start()              # opens (or makes) the database, starts the jobs
    await qunyi.feed(message)        # each event the host receives, as a memory.types event
    memory = await qunyi.context(message)  # what to put in the host's own reply prompt: memory.text
    await qunyi.stop()

Everything `qunyi run` does happens here too, except what belongs to the host: signals, logging set-up
and the platform connection. The data directory is held as a running bot holds it (`qunyi run` on it
is refused, the admin commands work beside it); `qunyi reload` is refused with a word on how this one
reloads, since the host's process is not signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from adapters.host import HostAdapter, HostSend, QunyiStopped
from bot.app import App, build_app, load_text_tables, resolve_data_dir
from bot.config import ConfigStore
from bot.inbound import inbound_handler
from bot.pid_file import PLUGIN, hold
from bot.reload_answer import ReloadAnswer, reload_and_answer
from bot.reply.policy import without_bot_names
from bot.responding import Responses
from bot.stopping import stop_serving
from bot.unrecorded import record_kept
from bot.writers import writing
from memory import messages
from memory.context.builder import ReplyContext
from memory.service import MemoryService
from memory.types import ChatMessage, InboundEvent

WRITER_ROLE = "run"  # how `qunyi compact` names this process among the database's writers

__all__ = ["HostSend", "QunyiPlugin", "QunyiStopped"]


class QunyiPlugin:
    """Qunyi's memory for a host bot on one platform (`platform`: its name in chat keys, such as `qq`,
    `telegram`, `discord`). Qunyi's answers (memory commands, and replies when a reply model is
    configured) go out through the host's `send`; to keep Qunyi quiet, set `[reply] enabled = false`.

    `config`: a config.toml (None: the built-in defaults and `QUNYI__…` environment variables);
    `data_dir` overrides its `[storage] data_dir`. Errors at start: bot.config.ConfigError (naming the
    key and line), memory.storage.DatabaseUnavailable, bot.holder_file.DataDirTaken (another bot, or
    `qunyi compact`, holds the data directory)."""

    def __init__(
        self, platform: str, send: HostSend, *, config: Path | None = None, data_dir: Path | None = None
    ) -> None:
        self.platform = platform
        self._send = send
        self._config_path = config
        self._data_dir = data_dir
        self._app: App | None = None
        self._adapter: HostAdapter | None = None
        self._responses = Responses()
        self._stopping = asyncio.Event()
        self._turn = asyncio.Lock()  # one start or stop at a time

    @property
    def app(self) -> App:
        """Every part of the running Qunyi (QunyiStopped when it is not running)."""
        if self._app is None:
            raise QunyiStopped("Qunyi is not running: call start() first")
        return self._app

    @property
    def memory(self) -> MemoryService:
        """The memory itself: record, recall, search, people and chats (memory.service)."""
        return self.app.memory

    async def start(self) -> None:
        """Open the database (made when new, upgraded when old), take the data directory, write what an
        earlier run kept aside, and start the jobs. Calling it again while running does nothing; after
        `stop()` it starts Qunyi again."""
        async with self._turn:
            if self._app is None:
                await self._start()

    async def _start(self) -> None:
        self._responses = Responses()
        self._stopping = asyncio.Event()
        config = ConfigStore.load(self._config_path)
        directory = resolve_data_dir(config.current, self._data_dir)
        app = await build_app(config, directory, lock=_held_as_bot(directory))
        try:
            await record_kept(app.memory, app.data_dir)
            await app.llm.ledger.write_held()
            await asyncio.to_thread(load_text_tables)
            app.runner.start()
            adapter = HostAdapter(self.platform, self._send)
            await adapter.start(inbound_handler(app, adapter, self._stopping, self._responses))
        except BaseException:
            await app.close()
            raise
        self._app, self._adapter = app, adapter

    async def feed(self, event: InboundEvent) -> None:
        """Hand Qunyi one event of the platform: a message (`memory.types.ChatMessage`, the bot's own
        sent messages too, with `is_bot`), an edit, a deletion, a member leaving or joining, a chat
        moved to a new id. Returns once it is recorded (a database another process holds is waited
        out); an answer goes out through `send` after. TypeError or ValueError for what is no event of
        this platform, QunyiStopped when Qunyi is not running."""
        if self._adapter is None:
            raise QunyiStopped(f"Qunyi is not running: the {self.platform} event was not recorded")
        await self._adapter.feed(event)

    async def context(self, message: ChatMessage) -> ReplyContext:
        """The memory Qunyi would hand its own reply model before answering `message` (recorded first
        when it was not fed yet): the recent messages, cards of the people in them, the group's slang,
        recalled memories and note hints, fitted to `[context]` budgets with no model call. Put `.text`
        in the host's reply prompt: it is delimited as quoted memory, so what members wrote cannot
        pose as instructions. Empty for a message whose sender asked to be forgotten."""
        memory = self.memory
        recorded = await memory.record(message)
        async with memory.db.read() as session:
            found = await messages.by_ids(session, [recorded.message_id])
        if not found:
            return ReplyContext()
        stored = found[0]
        question = without_bot_names(stored.text, self.app.settings.bot)
        return await memory.context_for_reply(recorded.chat_id, stored, question)

    def reload(self) -> ReloadAnswer:
        """Read the config file again, as `qunyi reload` makes a running bot do; a file with an error
        is rejected (`ok` false, the reason in `message`) and the settings in force stay."""
        return reload_and_answer(self.app)

    async def stop(self) -> None:
        """Stop the jobs and the answers under way (each within its grace), close the database and let
        the data directory go. Events already being recorded are, first; those fed after it began raise
        QunyiStopped. Calling it again does nothing."""
        async with self._turn:
            app, adapter = self._app, self._adapter
            if app is not None and adapter is not None:
                self._app = self._adapter = None
                await self._stop(app, adapter)

    async def _stop(self, app: App, adapter: HostAdapter) -> None:
        self._stopping.set()
        try:
            await stop_serving(app, self._responses, [adapter])
        finally:
            await app.close()

    async def __aenter__(self) -> QunyiPlugin:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.stop()


@contextlib.contextmanager
def _held_as_bot(directory: Path) -> Iterator[None]:
    """The data directory held as a running bot holds it, from before the database is opened (so a bot
    already running there, perhaps of an older Qunyi, is refused before its schema is upgraded under
    it) until it is closed: the pid file, and a writer's hold (refused while `qunyi compact` runs)."""
    with hold(directory, PLUGIN), writing(directory, WRITER_ROLE):
        yield
