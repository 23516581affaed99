"""The cog itself: discord.py's listeners feed Qunyi, `cog_load` starts it and `cog_unload` stops it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import discord
from discord.ext import commands

from adapters.discord.convert import PLATFORM
from adapters.discord.reading import EventReader
from adapters.discord.sending import send_text
from adapters.host import ArrivalOrder, feed_while_running
from bot.hosts.discord_cog.answers import SentAnswers
from bot.plugin import QunyiPlugin
from memory.clock import Clock, SystemClock
from memory.context.builder import ReplyContext
from memory.types import ChatKind, ChatMessage, InboundEvent

log = logging.getLogger(__name__)


class QunyiCog(commands.Cog, name="Qunyi"):
    """Qunyi's memory for the discord.py `bot` (platform `discord`: each channel and thread a chat, DMs
    private chats): a commands.Bot adds it (`add_cog`), a plain discord.Client is given it by
    `bot.hosts.discord_cog.attach`. `config` and `data_dir` as for bot.plugin.QunyiPlugin; `clock`
    dates the members leaving (Discord does not)."""

    def __init__(
        self,
        bot: discord.Client,
        *,
        config: Path | None = None,
        data_dir: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.bot = bot
        self.plugin = QunyiPlugin(PLATFORM, self.send, config=config, data_dir=data_dir)
        """The QunyiPlugin itself: its `memory`, `context()`, `reload()` (QunyiStopped when not running)."""
        self._reader = EventReader(clock or SystemClock())
        self._answers = SentAnswers()
        self._order = ArrivalOrder()  # a channel's messages, edits and deletions fed in the order they came

    async def cog_load(self) -> None:
        """Start Qunyi as `bot.add_cog` adds the cog (its errors are raised there, and the cog is not
        added). Says what the bot's intents keep from Qunyi."""
        intents = self.bot.intents
        if not intents.message_content:
            log.warning(
                "the bot's intents leave out Message Content: Discord sends the text only of messages "
                "that mention the bot, and Qunyi passes over the others, empty"
            )
        if not intents.members:
            log.info(
                "without the Server Members intent Qunyi hears of bans, not of members leaving or joining"
            )
        await self.plugin.start()

    async def cog_unload(self) -> None:
        """Stop Qunyi as the cog is removed (`bot.remove_cog`, or `bot.close()`): the events being
        recorded and the answers under way finish first, while the bot is still connected."""
        await self.plugin.stop()

    async def send(
        self, chat_id: str, text: str, *, chat_kind: ChatKind, reply_to: str | None
    ) -> ChatMessage:
        """Qunyi's answer, sent through the bot as the Discord adapter sends (a reply to `reply_to`, no
        @everyone or role pings, cut to fit): the bot.plugin.HostSend of this host."""
        return await self._answers.send(chat_id, send_text(self.bot, chat_id, text, reply_to=reply_to))

    async def context(self, message: discord.Message) -> ReplyContext:
        """The memory for the bot's own reply prompt to `message` (bot.plugin.QunyiPlugin.context);
        empty for a message Qunyi does not record (a system message, one that holds nothing)."""
        converted = self._reader.message(self.bot, message)
        return await self.plugin.context(converted[0]) if converted else ReplyContext()

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        """A message, the bot's own too (as the bot's); Qunyi's own answers were recorded as sent."""
        events = self._reader.message(self.bot, message)
        async with self._order.turn(message.channel.id):  # an echo's wait holds no later message back
            for event in events:
                if not (event.is_bot and await self._answers.is_echo(event)):
                    await self._feed([event])

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self._feed_in_order(payload.channel_id, self._reader.edit(self.bot, payload))

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._feed_in_order(payload.channel_id, self._reader.deletion(payload))

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self._feed_in_order(payload.channel_id, self._reader.bulk_deletion(payload))

    @commands.Cog.listener()
    async def on_raw_member_remove(self, payload: discord.RawMemberRemoveEvent) -> None:
        await self._feed(self._reader.member_removed(self.bot, payload))

    @commands.Cog.listener()
    async def on_member_ban(self, guild: discord.Guild, user: Any) -> None:
        await self._feed(self._reader.member_banned(self.bot, guild, user))

    @commands.Cog.listener()
    async def on_member_join(self, member: discord.Member) -> None:
        await self._feed(self._reader.member_joined(self.bot, member))

    async def _feed_in_order(self, channel: int, events: Iterable[InboundEvent]) -> None:
        """Feed `events` of `channel` after those of its events that came before (discord.py runs each
        listener in a task of its own)."""
        async with self._order.turn(channel):
            await self._feed(events)

    async def _feed(self, events: Iterable[InboundEvent]) -> None:
        await feed_while_running(self.plugin.feed, events)
