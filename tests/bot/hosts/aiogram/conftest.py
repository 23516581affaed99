"""Fixtures of the aiogram host's tests: the loopback fake Telegram Bot API (`api`,
tests.adapters.telegram.bot_api), as the Telegram adapter's tests have it."""

from tests.adapters.telegram.bot_api import api

__all__ = ["api"]
