"""`qunyi web`: serve the admin console on loopback until Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click
from aiohttp import web

from adapters.listening import CannotListen, listen
from bot.cli.options import async_command, open_app, open_config, runtime_options
from bot.web.app import build_web_app
from bot.web.security import check_host, new_token


@click.command("web")
@click.option("--host", default=None, help="Address to listen on (default: [web] host, 127.0.0.1).")
@click.option(
    "--port",
    default=None,
    type=click.IntRange(0, 65_535),
    help="Port (default: [web] port, 8765; 0 picks a free one, printed with the link).",
)
@runtime_options
@async_command
async def web_command(
    host: str | None, port: int | None, config_path: Path | None, data_dir: Path | None
) -> None:
    """The admin web console: jargon review, topics, people, notes, forgetting, LLM usage, config.

    Every request needs the token of `[web] token` (or QUNYI__WEB__TOKEN); without one, a random token
    is made now and printed once with the login link.
    """
    config = open_config(config_path)
    settings = config.current.web
    host_key, port_key = (
        ("--host" if host else "[web] host"),
        ("--port" if port is not None else "[web] port"),
    )
    host = host or settings.host
    port = settings.port if port is None else port
    try:
        check_host(host, settings.allow_remote)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    token = settings.token or new_token()
    app = await open_app(config, data_dir, create=True, writes=True)
    runner = web.AppRunner(build_web_app(app, token), access_log=None)
    await runner.setup()
    try:
        try:
            await listen(runner, host, port, host_key=host_key, port_key=port_key)
        except CannotListen as exc:
            raise click.ClickException(str(exc)) from None
        # Before saying it serves: a signal sent once it says so stops it cleanly, never as a command
        # interrupted while starting.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        bound = runner.addresses[0][1] if runner.addresses else port
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"Qunyi admin console on http://{shown}:{bound}/ (data: {app.data_dir})")
        if settings.token:
            click.echo("Log in with the token from [web] token: open …/?token=<token>")
        else:
            click.echo(f"Log in (this token is shown once): http://{shown}:{bound}/?token={token}")
        await stop.wait()
    finally:
        await runner.cleanup()
        await app.close()


COMMANDS = [web_command]
