"""`openai`: any OpenAI-compatible `/v1/embeddings` endpoint, over aiohttp with a timeout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiohttp

from memory.embeddings.local import EmbedderUnavailable


class OpenAIEmbedder:
    """POSTs `{"model", "input"}` to `{base_url}/embeddings` (base_url ends in /v1, as for the SDK)."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_seconds: float = 30.0) -> None:
        if not base_url:
            raise ValueError("the openai embedder needs [recall] base_url")
        if not model:
            raise ValueError("the openai embedder needs [recall] model")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key = api_key
        self.timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self.dimension = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "input": list(texts)}
        try:
            async with (
                aiohttp.ClientSession(timeout=self.timeout) as http,
                http.post(self.url, json=payload, headers=headers) as response,
            ):
                if response.status != 200:
                    body = (await response.text())[:300]
                    raise EmbedderUnavailable(f"{self.url} answered {response.status}: {body}")
                data: dict[str, Any] = await response.json()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EmbedderUnavailable(f"{self.url} unreachable: {exc!r}") from exc
        try:
            items = sorted(data["data"], key=lambda item: item.get("index", 0))
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderUnavailable(f"{self.url} sent an unexpected answer: {exc!r}") from exc
        if len(vectors) != len(texts):
            raise EmbedderUnavailable(f"{self.url} sent {len(vectors)} vectors for {len(texts)} texts")
        if vectors:
            self.dimension = len(vectors[0])
        return vectors
