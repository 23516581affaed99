"""Building the live adapters the config enables."""

from __future__ import annotations

from adapters.base import Adapter
from adapters.console import ConsoleAdapter
from bot.app import App
from bot.config import Settings
from bot.config.store import Listener


def follow_bot_identity(console: ConsoleAdapter) -> Listener:
    """A config listener: the console addresses and signs as the `[bot]` name and self_id in force, as
    the reply policy does, so a reload renaming the bot needs no restart there either."""

    def listener(_old: Settings, new: Settings) -> None:
        console.bot_id = new.bot.self_id
        console.bot_name = new.bot.name

    return listener


def build_adapters(app: App) -> list[Adapter]:
    """One adapter per name in `[adapters] enabled`, configured from its table."""
    settings = app.settings
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
            adapters.append(DiscordAdapter(settings.adapters.discord))
    return adapters
