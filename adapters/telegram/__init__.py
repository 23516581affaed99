"""Telegram through aiogram 3 (long polling, or a webhook); aiogram is the optional extra `telegram`."""

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.config import TelegramConfig

__all__ = ["TelegramAdapter", "TelegramConfig"]
