"""Configuration: `config.toml` validated into typed settings, with reload."""

from bot.config.loader import ConfigError, load_settings
from bot.config.settings import Settings
from bot.config.store import ConfigStore

__all__ = ["ConfigError", "ConfigStore", "Settings", "load_settings"]
