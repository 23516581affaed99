"""The settings in force, and reloading them without a restart."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from bot.config.loader import ConfigError, load_settings
from bot.config.settings import Settings

log = logging.getLogger(__name__)

Listener = Callable[[Settings, Settings], None]


class ConfigStore:
    """Holds the current Settings. `reload()` swaps in a new valid file; an invalid one is rejected
    and the old settings stay in force. Listeners hear (old, new) after each successful swap."""

    def __init__(self, settings: Settings, path: Path | None) -> None:
        self.current = settings
        self.path = path
        self._listeners: list[Listener] = []
        self._mtime = self._stat()
        self.rejection: str | None = None

    @classmethod
    def load(cls, path: Path | None) -> ConfigStore:
        return cls(load_settings(path), path)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _stat(self) -> float | None:
        if self.path is None:
            return None
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def reload(self) -> bool:
        """Re-read the file. True when new settings are now in force; otherwise `rejection` says why."""
        self._mtime = self._stat()
        try:
            new = load_settings(self.path)
        except ConfigError as exc:
            self.rejection = str(exc)
            log.error("config reload rejected, keeping the settings in force: %s", exc)
            return False
        self.rejection = None
        old, self.current = self.current, new
        for listener in self._listeners:
            try:
                listener(old, new)
            except Exception:
                log.exception("a config listener failed after reload")
        log.info("config reloaded from %s", self.path or "the built-in defaults (no config file)")
        return True

    def reload_if_changed(self) -> bool:
        """Reload when the file's modification time changed since the last look."""
        if self.path is None or self._stat() == self._mtime:
            return False
        return self.reload()
