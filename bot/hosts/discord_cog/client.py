"""Qunyi for a plain discord.Client, which takes no cogs: the cog's listeners are chained to the client's
own event handlers, and the cog is loaded as the client logs in and unloaded as it closes, as a
commands.Bot would do with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import discord

from bot.hosts.discord_cog.cog import QunyiCog
from memory.clock import Clock


def attach(
    client: discord.Client,
    *,
    config: Path | None = None,
    data_dir: Path | None = None,
    clock: Clock | None = None,
) -> QunyiCog:
    """Qunyi for `client` (the arguments as QunyiCog's), before `client.run` or `client.start`: every
    event the client dispatches also goes to the cog's listeners, each in a task of its own as a
    commands.Bot runs them (a failure goes to the client's `on_error`); the client's own handlers, set
    before or after, are kept. Qunyi starts as the client logs in (`client.login`, which `start` and
    `run` call), after its `setup_hook` (an error then stops the client's start), and stops as
    `client.close()` begins, while the client is still connected."""
    cog = QunyiCog(client, config=config, data_dir=data_dir, clock=clock)
    _Chained(client, cog)
    return cog


class _Chained:
    """The client's `dispatch`, `login` and `close`, each followed or preceded by the cog's part (not
    `setup_hook`, which a handler set with `@client.event` replaces)."""

    def __init__(self, client: discord.Client, cog: QunyiCog) -> None:
        self._client, self._cog = client, cog
        self._listeners: dict[str, list[Callable[..., Any]]] = {}
        for name, listener in cog.get_listeners():
            self._listeners.setdefault(name, []).append(listener)
        self._dispatch, self._login, self._close = client.dispatch, client.login, client.close
        client.dispatch = self.dispatch  # type: ignore[method-assign]
        client.login = self.login  # type: ignore[method-assign]
        client.close = self.close  # type: ignore[method-assign]

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        self._dispatch(event, *args, **kwargs)
        name = f"on_{event}"
        for listener in self._listeners.get(name, ()):
            self._client._schedule_event(listener, name, *args, **kwargs)  # as commands.Bot's dispatch

    async def login(self, token: str) -> None:
        await self._login(token)
        await self._cog.cog_load()

    async def close(self) -> None:
        try:
            await self._cog.cog_unload()
        finally:
            await self._close()
