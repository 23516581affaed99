"""The web playground: chat with the bot in a browser as one or several members, in several chats."""

from adapters.playground.adapter import PlaygroundAdapter
from adapters.playground.config import PlaygroundConfig

__all__ = ["PlaygroundAdapter", "PlaygroundConfig"]
