"""Fixtures of the adapters' tests: the loopback fake Telegram Bot API (`api`, tests.adapters.telegram)."""

from tests.adapters.telegram.bot_api import api

__all__ = ["api"]
