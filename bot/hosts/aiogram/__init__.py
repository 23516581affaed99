"""Qunyi inside an aiogram 3 (Telegram) bot: the bot's Dispatcher feeds Qunyi every update it gets, its
Bot records what it sends, and Qunyi's answers go out through that Bot. aiogram is the extra `telegram`.

    bot = Bot(TOKEN)
    dp = Dispatcher()
    qunyi = AiogramQunyi(bot, config=Path("config.toml"))
    qunyi.attach(dp)  # before or after the bot's own routers: they all see every update as before
    await dp.start_polling(bot, allowed_updates=qunyi.allowed_updates(dp))

The updates are read as Qunyi's own Telegram adapter reads them (adapters.telegram.reading), so memory
is the same whichever of the two recorded a chat.
"""

from adapters.extras import require

require("aiogram", "telegram")

from bot.hosts.aiogram.qunyi import AiogramQunyi  # noqa: E402  # after the check of the extra

__all__ = ["AiogramQunyi"]
