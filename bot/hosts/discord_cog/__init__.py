"""Qunyi as a cog of a discord.py 2 bot: the bot's listeners feed Qunyi what its gateway tells (messages,
edits, deletions, members leaving and joining), and Qunyi's answers go out through the bot. discord.py
is the extra `discord`.

    bot = commands.Bot(command_prefix="!", intents=intents)
    await bot.add_cog(QunyiCog(bot, config=Path("config.toml")))  # in setup_hook, say

    client = discord.Client(intents=intents)  # a plain Client, which takes no cogs
    attach(client, config=Path("config.toml"))  # before client.run: the cog's listeners chained to its own

The events are read as Qunyi's own Discord adapter reads them (adapters.discord.reading), so memory is
the same whichever of the two recorded a chat.
"""

from adapters.extras import require

require("discord", "discord")

from bot.hosts.discord_cog.client import attach  # noqa: E402  # after the check of the extra
from bot.hosts.discord_cog.cog import QunyiCog  # noqa: E402

__all__ = ["QunyiCog", "attach"]
