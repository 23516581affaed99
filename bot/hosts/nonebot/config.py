"""Settings of the nonebot2 plugin, read from nonebot's own config (its `.env` files or environment)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class NonebotConfig(BaseModel):
    """Where Qunyi's settings and data are, as nonebot's config keys (`QUNYI_CONFIG=config.toml` in
    `.env`). `qunyi_config`: a Qunyi config.toml (unset: the built-in defaults and `QUNYI__…`
    environment variables); `qunyi_data_dir`: the data directory, over the file's `[storage] data_dir`."""

    qunyi_config: Path | None = None
    qunyi_data_dir: Path | None = None
