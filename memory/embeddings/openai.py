"""`openai`: any OpenAI-compatible `/v1/embeddings` endpoint, over aiohttp with a timeout."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import aiohttp

from memory.embeddings.local import EmbedderUnavailable
from memory.text.truncate import truncate

REQUEST_CHARS = 60_000
REQUEST_INPUTS = 512


def request_batches(texts: Sequence[str]) -> Iterator[list[str]]:
    """`texts` in order, split so that no request carries more than `REQUEST_INPUTS` texts or (unless
    one text alone does) `REQUEST_CHARS` characters: endpoints cap a request as well as an input."""
    batch: list[str] = []
    size = 0
    for text in texts:
        if batch and (len(batch) == REQUEST_INPUTS or size + len(text) > REQUEST_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += len(text)
    if batch:
        yield batch


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
        """One vector per text, in order; vectors of no values, or of several sizes (even across the
        requests a long list is split into, or across calls), are refused: they can be compared with
        nothing. The first size seen holds for the process; the embedder is a start-only setting."""
        vectors: list[list[float]] = []
        for batch in request_batches(texts):
            vectors.extend(await self._request(batch))
        sizes = {len(v) for v in vectors}
        if len(sizes) > 1 or 0 in sizes:
            raise EmbedderUnavailable(f"{self.url} sent vectors of {sorted(sizes)} values for one model")
        if vectors and self.dimension and len(vectors[0]) != self.dimension:
            # Taking the new size would make every stored vector "of another size" and embed it again,
            # back and forth for an endpoint that alternates between two models.
            raise EmbedderUnavailable(
                f"{self.url} sent vectors of {len(vectors[0])} values for {self.model}, which gave "
                f"{self.dimension} before; restart the bot if the model behind that name was changed"
            )
        if vectors:
            self.dimension = len(vectors[0])
        return vectors

    async def _request(self, texts: list[str]) -> list[list[float]]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "input": texts}
        try:
            async with (
                aiohttp.ClientSession(timeout=self.timeout) as http,
                http.post(self.url, json=payload, headers=headers) as response,
            ):
                if response.status != 200:
                    body = truncate(await response.text(errors="replace"), 300)
                    raise EmbedderUnavailable(f"{self.url} answered {response.status}: {body}")
                data: Any = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EmbedderUnavailable(f"{self.url} unreachable: {exc!r}") from exc
        except ValueError as exc:  # the body is not JSON
            raise EmbedderUnavailable(f"{self.url} sent an answer that is not JSON: {exc}") from exc
        try:
            positions = [item.get("index", n) for n, item in enumerate(data["data"])]
            if sorted(positions) != list(range(len(positions))):  # else a text gets another's vector
                raise EmbedderUnavailable(f"{self.url} sent vectors for index {positions}, not one each")
            items = [item for _, item in sorted(zip(positions, data["data"], strict=True))]
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise EmbedderUnavailable(f"{self.url} sent an unexpected answer: {exc!r}") from exc
        if len(vectors) != len(texts):
            raise EmbedderUnavailable(f"{self.url} sent {len(vectors)} vectors for {len(texts)} texts")
        if not all(map(math.isfinite, itertools.chain(*vectors))):
            raise EmbedderUnavailable(f"{self.url} sent vectors with non-finite values")
        return vectors
