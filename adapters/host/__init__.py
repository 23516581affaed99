"""The platform connection of another program that embeds Qunyi (bot.plugin): it hands in the events."""

from adapters.host.adapter import HostAdapter, HostSend, QunyiStopped, feed_while_running, sending_an_answer
from adapters.host.order import ArrivalOrder, Place

__all__ = [
    "ArrivalOrder",
    "HostAdapter",
    "HostSend",
    "Place",
    "QunyiStopped",
    "feed_while_running",
    "sending_an_answer",
]
