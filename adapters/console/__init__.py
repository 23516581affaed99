"""A terminal group chat: type as several users (`/as alice`) and talk to the bot."""

from adapters.console.adapter import ConsoleAdapter

__all__ = ["ConsoleAdapter"]
