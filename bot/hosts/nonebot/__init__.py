"""Qunyi as a nonebot2 plugin for QQ bots on OneBot v11 (nonebot-adapter-onebot):
`nonebot.load_plugin("bot.hosts.nonebot")`, or `plugins = ["bot.hosts.nonebot"]` in pyproject's
`[tool.nonebot]`. The config keys are in bot.hosts.nonebot.config.

Every message, recall and membership notice its OneBot v11 bots receive is recorded, before and
beside every other plugin (its matchers run at priority 1 and block nothing), and so is what the bot
sends, through Qunyi or any other plugin. Qunyi's answers (its memory commands; replies when `[llm]`
has a reply model) go out through the bot that saw the chat. Another plugin reaches the running Qunyi
(`context()` for its own reply prompt, `memory`) with `qunyi()`.
"""

from __future__ import annotations

from nonebot import get_driver, get_plugin_config, on_message, on_notice
from nonebot.adapters.onebot.v11 import Bot, Event, MessageEvent, NoticeEvent
from nonebot.plugin import PluginMetadata
from nonebot.plugin.on import on

from bot.hosts.nonebot.adapter import NonebotQunyi
from bot.hosts.nonebot.arrivals import follow_arrivals
from bot.hosts.nonebot.config import NonebotConfig
from bot.plugin import QunyiPlugin

__plugin_meta__ = PluginMetadata(
    name="群忆 Qunyi",
    description="群聊记忆：话题、遗忘、黑话、群友档案、笔记 (memory for group chats)",
    usage="记录每条消息；/recall 关键词 查回忆 (records every message; /recall <words> recalls)",
    type="application",
    config=NonebotConfig,
    supported_adapters={"~onebot.v11"},
)

PRIORITY = 1
"""The matchers' priority: that of nonebot's own default. A matcher that blocks (`on_message`'s default)
hides a message only from those of later priorities, and Qunyi must see every one."""

_qunyi = NonebotQunyi()


def qunyi() -> QunyiPlugin:
    """The running Qunyi, for another plugin: `context(message)` for its own reply prompt, `memory`.
    QunyiStopped before nonebot's driver started it or after it stopped."""
    return _qunyi.plugin


_driver = get_driver()


@_driver.on_startup
async def _start() -> None:
    await _qunyi.start(get_plugin_config(NonebotConfig))


@_driver.on_shutdown
async def _stop() -> None:
    await _qunyi.stop()


@on_message(priority=PRIORITY, block=False).handle()
async def _message(bot: Bot, event: MessageEvent) -> None:
    await _qunyi.message(bot, event)


@on("message_sent", priority=PRIORITY, block=False).handle()
async def _message_sent(bot: Bot, event: Event) -> None:
    await _qunyi.message(bot, event)


@on_notice(priority=PRIORITY, block=False).handle()
async def _notice(bot: Bot, event: NoticeEvent) -> None:
    await _qunyi.notice(bot, event)


Bot.on_called_api(_qunyi.api_called)
follow_arrivals()
