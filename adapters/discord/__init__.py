"""Discord through discord.py 2: guild text channels, threads and DMs; discord.py is the extra `discord`."""

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.config import DiscordConfig

__all__ = ["DiscordAdapter", "DiscordConfig"]
