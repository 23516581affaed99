"""How much a running process keeps in memory per chat (alias indexes, vectors): the chats used last,
so that a bot in many chats does not hold something for every chat it ever served."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)

CHATS_HELD = 256
"""The chats whose cached state is held at most; the least recently used are dropped first and read
again from the database at their next use, as after a restart."""


def drop_least_recent(
    cache: OrderedDict[K, Any], limit: int, keep: Callable[[K], bool] = lambda _key: False
) -> None:
    """Drop the least recently used entries of `cache` (its first ones: move an entry to the end as it
    is used) past `limit`, stopping at the first entry `keep` holds on to."""
    while len(cache) > limit and not keep(next(iter(cache))):
        cache.popitem(last=False)
