"""The running bot's answer to `qunyi reload`.

A SIGHUP carries nothing back, and the command can only check the config file it finds with its own
environment, which may not be the bot's (another `--config`, other `QUNYI__…` variables). So the bot
writes what became of each signalled reload to `<data dir>/reload.json`, and the command waits for that
answer instead of reporting its own check as the outcome."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bot.app import App

ANSWER_FILE = "reload.json"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReloadAnswer:
    """What one reload of the running bot came to: `ok` with the config now in force, or the reason
    it was rejected (the old settings stay)."""

    pid: int
    at: float
    ok: bool
    message: str


def reload_and_answer(app: App) -> ReloadAnswer:
    """Reload the bot's config and leave the outcome where `qunyi reload` looks for it."""
    config = app.config
    source = str(config.path) if config.path is not None else "the defaults"
    if config.reload():
        message = f"reloaded {source}"
        if pending := app.restart_pending():
            message += f"; {', '.join(pending)} take effect only after a restart"
        answer = ReloadAnswer(os.getpid(), time.time(), True, message)
    else:
        answer = ReloadAnswer(os.getpid(), time.time(), False, config.rejection or "rejected")
    try:
        _write(app.data_dir / ANSWER_FILE, answer)
    except OSError as exc:
        log.warning("could not leave the reload's outcome for `qunyi reload`: %s", exc)
    return answer


def _write(path: Path, answer: ReloadAnswer) -> None:
    partial = path.with_name(f".{path.name}.{answer.pid}")
    try:
        partial.write_text(json.dumps(asdict(answer), ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)  # gone already once it replaced `path`


def read_answer(data_dir: Path) -> ReloadAnswer | None:
    """The last answer written in `data_dir`, or None when there is none that can be read."""
    try:
        fields = json.loads((data_dir / ANSWER_FILE).read_text(encoding="utf-8"))
        return ReloadAnswer(
            int(fields["pid"]), float(fields["at"]), bool(fields["ok"]), str(fields["message"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def await_answer(data_dir: Path, pid: int, since: float, timeout: float) -> ReloadAnswer | None:
    """The answer of bot `pid` to a reload asked at `since` (time.time()), or None when none came
    within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = read_answer(data_dir)
        if answer is not None and answer.pid == pid and answer.at >= since:
            return answer
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)
