"""Qunyi inside another bot framework's process, on bot.plugin.QunyiPlugin: a nonebot2 plugin (QQ), an
aiogram 3 middleware (Telegram), a discord.py 2 cog (Discord)."""
