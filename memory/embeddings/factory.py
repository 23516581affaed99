"""Choosing the embedder from config: `none` (default), `local` or `openai`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from memory.embeddings.local import DEFAULT_MODEL, LocalEmbedder
from memory.embeddings.openai import OpenAIEmbedder
from memory.ports import Embedder

EmbedderKind = Literal["none", "local", "openai"]
EMBEDDER_KINDS: tuple[str, ...] = ("none", "local", "openai")


@dataclass(frozen=True, slots=True)
class EmbedderConfig:
    """`model` empty means the kind's default; `api_key_env` names the variable holding the key."""

    kind: EmbedderKind = "none"
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_seconds: float = 30.0


def make_embedder(config: EmbedderConfig) -> Embedder | None:
    """The configured embedder, or None for `none`. Nothing is loaded or contacted here."""
    if config.kind == "none":
        return None
    if config.kind == "local":
        return LocalEmbedder(config.model or DEFAULT_MODEL)
    if config.kind == "openai":
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        return OpenAIEmbedder(config.base_url, config.model, key, config.timeout_seconds)
    raise ValueError(f"unknown embedder {config.kind!r}; choose one of {', '.join(EMBEDDER_KINDS)}")
