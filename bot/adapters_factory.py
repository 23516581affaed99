"""Building the live adapters the config enables."""

from __future__ import annotations

import functools
import logging
from typing import Protocol

from adapters.base import Adapter
from adapters.console import ConsoleAdapter
from bot.app import App
from bot.config import Settings
from bot.config.store import Listener

log = logging.getLogger(__name__)
TABLE_ADAPTERS = ("telegram", "discord")  # off unless their table (with the token) exists


class SignsAsBot(Protocol):
    """A local adapter that plays the bot itself (console, playground): it knows the bot's id and name."""

    bot_id: str
    bot_name: str


def follow_bot_identity(adapter: SignsAsBot) -> Listener:
    """A config listener: the adapter addresses and signs as the `[bot]` name and self_id in force, as
    the reply policy does, so a reload renaming the bot needs no restart there either."""

    def listener(_old: Settings, new: Settings) -> None:
        adapter.bot_id = new.bot.self_id
        adapter.bot_name = new.bot.name

    return listener


def build_adapters(app: App) -> list[Adapter]:
    """One adapter per name in `[adapters] enabled`, configured from its table. A platform whose table
    is set (its token given) but that `enabled` leaves out is not started, with a warning: the table
    alone looked like it turned the platform on."""
    settings = app.settings
    for name in TABLE_ADAPTERS:
        if getattr(settings.adapters, name) is not None and name not in settings.adapters.enabled:
            log.warning(
                "[adapters.%s] is set, but %r is not in [adapters] enabled: the %s adapter is not started "
                "(add it to enabled to connect to %s)",
                name,
                name,
                name,
                name.capitalize(),
            )
    adapters: list[Adapter] = []
    for name in settings.adapters.enabled:
        if name == "console":
            console = settings.adapters.console
            adapter = ConsoleAdapter(
                console.chat,
                console.chat_name,
                console.user,
                settings.bot.self_id,
                settings.bot.name,
                app.clock.now,
            )
            app.config.subscribe(follow_bot_identity(adapter))
            adapters.append(adapter)
        elif name == "onebot_v11":
            from adapters.onebot_v11 import OneBotAdapter

            adapters.append(OneBotAdapter(settings.adapters.onebot_v11, clock=app.clock))
        elif name == "telegram":
            from adapters.telegram import TelegramAdapter

            assert settings.adapters.telegram is not None
            adapters.append(TelegramAdapter(settings.adapters.telegram))
        elif name == "discord":
            from adapters.discord import DiscordAdapter

            assert settings.adapters.discord is not None
            adapters.append(DiscordAdapter(settings.adapters.discord, clock=app.clock))
        elif name == "playground":
            from adapters.playground import PlaygroundAdapter

            playground = PlaygroundAdapter(
                settings.adapters.playground,
                bot_id=settings.bot.self_id,
                bot_name=settings.bot.name,
                clock=app.clock,
                stored_kind=functools.partial(app.memory.chat_kind, PlaygroundAdapter.platform),
                stored_members=functools.partial(app.memory.chat_nicknames, PlaygroundAdapter.platform),
            )
            app.config.subscribe(follow_bot_identity(playground))
            adapters.append(playground)
    return adapters
