"""The console adapter: stdin lines become group messages, bot replies are printed."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TextIO

from adapters.base import STOP_GRACE_SECONDS, Adapter, MessageHandler, mentions
from adapters.neutral import holds_nothing
from adapters.playground.config import DEFAULT_MAX_NAME_CHARS
from adapters.playground.event import BadPost, user_name
from memory.text import normalize
from memory.types import ChatKind, ChatMessage, InvalidMessage

SHOWN_BYTES = 60  # of a line refused as not text
HELP = "Type to chat. /as <name> switches speaker, @<bot name> addresses the bot, /quit leaves."


class ConsoleAdapter(Adapter):
    """One terminal group chat. `feed_line` is the test seam; `start` reads `source` (stdin) until EOF or
    /quit."""

    platform = "console"

    def __init__(
        self,
        chat_id: str,
        chat_name: str,
        user: str,
        bot_id: str,
        bot_name: str,
        now: Callable[[], datetime],
        output: TextIO | None = None,
        source: TextIO | None = None,
    ) -> None:
        self.chat_id = chat_id
        self.chat_name = chat_name
        self.user = user
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.now = now
        self.output = output or sys.stdout
        self.source = source or sys.stdin
        self._ids = itertools.count(1)
        self._handler: MessageHandler | None = None
        self._reader: asyncio.Task[None] | None = None
        self._lines: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self.finished = asyncio.Event()

    def _print(self, line: str) -> None:
        print(line, file=self.output, flush=True)

    async def feed_line(self, line: str) -> None:
        """Handle one typed line as the current speaker."""
        line = line.rstrip("\n")
        if not line.strip():
            return
        if line.startswith("/as "):
            self._switch_speaker(line[4:])
            return
        if line.strip() in {"/quit", "/exit"}:
            self.finished.set()
            return
        if self._handler is None:
            raise RuntimeError("feed_line before start: no handler")
        addressed = mentions(line, self.bot_name, self.bot_id)
        try:
            message = ChatMessage(
                platform=self.platform,
                chat_id=self.chat_id,
                message_id=f"c{self.now().timestamp():.0f}-{next(self._ids)}",
                sender_id=self.user,
                sender_name=self.user,
                chat_name=self.chat_name,
                text=line,
                time=self.now(),
                mentions=(self.bot_id,) if addressed else (),
                to_bot=addressed,
            )
        except InvalidMessage as exc:
            self._print(f"(not sent: {exc})")
            return
        if holds_nothing(message.text):  # control characters only: nothing a member could read
            return
        await self._handler(message)

    def _switch_speaker(self, typed: str) -> None:
        """`/as NAME`: speak as NAME from now on. A name the playground would refuse (blank, too
        long, holding a character that shows nothing) is refused as there, and so are the bot's own
        id and name: what was typed as it was recorded as the bot's own messages."""
        try:
            name = user_name({"user": typed}, max_name_chars=DEFAULT_MAX_NAME_CHARS)
        except BadPost as exc:
            self._print(f"(still speaking as {self.user}: the name {str(exc).removeprefix('user ')})")
            return
        if normalize(name) in (normalize(self.bot_id), normalize(self.bot_name)):
            self._print(f"(still speaking as {self.user}: {name} is the bot itself; pick a member's name)")
            return
        self.user = name
        self._print(f"(now speaking as {self.user})")

    def _pump_input(self, loop: asyncio.AbstractEventLoop) -> None:
        """The reading thread: a daemon, so a `readline` still blocked at exit never holds the process
        (an executor thread would keep Ctrl+C or SIGTERM waiting until Enter is pressed)."""
        # A terminal's bytes are read as bytes and decoded line by line (`_read_input`): a line that is
        # not in its encoding (GBK pasted into a UTF-8 terminal) would make the text reader raise and
        # end the input, and with it the bot.
        raw = getattr(self.source, "buffer", None)
        lines: Iterator[str | bytes] = (
            iter(raw.readline, b"") if raw is not None else iter(self.source.readline, "")
        )
        try:
            for line in lines:
                loop.call_soon_threadsafe(self._lines.put_nowait, line)
        except (OSError, ValueError):  # input closed under us
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self._lines.put_nowait, None)

    async def _read_input(self) -> None:
        while not self.finished.is_set():
            line = await self._lines.get()
            if line is None:
                break
            typed = self._decoded(line) if isinstance(line, bytes) else line
            if typed is not None:
                await self.feed_line(typed)
        self.finished.set()

    def _decoded(self, raw: bytes) -> str | None:
        """A line read from the terminal as text in its encoding, or None (and a note saying why) when
        it is not."""
        encoding = getattr(self.source, "encoding", None) or "utf-8"
        try:
            return raw.decode(encoding).removesuffix("\n").removesuffix("\r")
        except UnicodeDecodeError as exc:
            shown = raw[:SHOWN_BYTES].rstrip(b"\r\n")
            self._print(f"(not sent: the line is not {encoding} text, at byte {exc.start}: {shown!r})")
            return None

    async def start(self, handler: MessageHandler) -> None:
        self._handler = handler
        self._print(HELP)
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump_input, args=(loop,), name="console-input", daemon=True).start()
        self._reader = asyncio.create_task(self._read_input())

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Stop reading; the lines already typed are handled first (for up to `within` seconds)."""
        self._lines.put_nowait(None)
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            _done, pending = await asyncio.wait({reader}, timeout=within)
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.finished.set()

    async def send_text(
        self, chat_id: str, text: str, *, chat_kind: ChatKind = ChatKind.GROUP, reply_to: str | None = None
    ) -> ChatMessage:
        self._print(f"{self.bot_name}: {text}")
        message_id = f"bot-{self.now().timestamp():.0f}-{next(self._ids)}"
        return ChatMessage.outgoing(
            self.platform,
            chat_id,
            message_id,
            self.bot_id,
            self.bot_name,
            text,
            self.now(),
            chat_kind,
            reply_to,
        )
