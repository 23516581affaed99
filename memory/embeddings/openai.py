"""`openai`: any OpenAI-compatible `/v1/embeddings` endpoint, over aiohttp with a timeout."""

from __future__ import annotations

import base64
import itertools
import logging
import math
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import aiohttp

from memory.embeddings.local import EmbedderUnavailable
from memory.secret_text import without_secret
from memory.text.truncate import truncate

log = logging.getLogger(__name__)

REQUEST_CHARS = 60_000
REQUEST_INPUTS = 512
SIZE_REFUSALS = frozenset({400, 413, 422})
"""Statuses with which endpoints refuse a request too large: too many inputs (DashScope takes 10 or 25
a request), or an input over the model's tokens (a 512-token model behind SiliconFlow answers 413)."""
SHORTEST_CUT = 200
"""A refused text is cut in half while longer than this: a shorter one is not refused for its length."""


def _values(embedding: Any) -> list[float]:
    """An answer's vector: a list of numbers, or the base64 of little-endian float32 values, which some
    servers and proxies send (`encoding_format` "base64") though it was not asked for."""
    if isinstance(embedding, str):
        packed = base64.b64decode(embedding, validate=True)
        if len(packed) % 4:
            raise ValueError(f"base64 vector of {len(packed)} bytes, not float32 values")
        return list(struct.unpack(f"<{len(packed) // 4}f", packed))
    return [float(x) for x in embedding]


class RefusedRequest(EmbedderUnavailable):
    """The endpoint refused a request with one of `SIZE_REFUSALS`: perhaps for its size."""


def request_batches(texts: Sequence[str], most_inputs: int = REQUEST_INPUTS) -> Iterator[list[str]]:
    """`texts` in order, split so that no request carries more than `most_inputs` texts or (unless
    one text alone does) `REQUEST_CHARS` characters: endpoints cap a request as well as an input."""
    batch: list[str] = []
    size = 0
    for text in texts:
        if batch and (len(batch) == most_inputs or size + len(text) > REQUEST_CHARS):
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
        self.most_inputs = REQUEST_INPUTS
        """Texts per request: lowered to what the endpoint took when it refused more."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; vectors of no values, or of several sizes (even across the
        requests a long list is split into, or across calls), are refused: they can be compared with
        nothing. The first size seen holds for the process; the embedder is a start-only setting."""
        vectors: list[list[float]] = []
        for batch in request_batches(texts, self.most_inputs):
            vectors.extend((await self._fitted(batch))[0])
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

    async def _fitted(self, texts: list[str]) -> tuple[list[list[float]], bool]:
        """The vectors of `texts`, in requests the endpoint takes, and whether it took them as sent.

        A request refused (`RefusedRequest`) is split in half; when both halves are taken as sent, the
        count was too many, and half of it is sent from then on. One text refused alone is cut in half
        (at a character's edge) while over `SHORTEST_CUT`, and its vector is that of its start. Without
        this an endpoint's cap on inputs per request, or a model's on tokens per input, refused the
        backfill's batch at every turn, for ever."""
        try:
            return await self._request(texts), True
        except RefusedRequest:
            if len(texts) > 1:
                half = len(texts) // 2
                first, first_whole = await self._fitted(texts[:half])
                rest, rest_whole = await self._fitted(texts[half:])
                if first_whole and rest_whole and half < self.most_inputs:
                    log.warning(
                        "%s refused %d texts a request; sending at most %d", self.url, len(texts), half
                    )
                    self.most_inputs = half
                return first + rest, False
            if len(texts[0]) <= SHORTEST_CUT:
                raise
            cut = truncate(texts[0], len(texts[0]) // 2, ellipsis="")
            log.info(
                "%s refused a text of %d characters; embedding its first %d",
                self.url,
                len(texts[0]),
                len(cut),
            )
            vectors, _ = await self._fitted([cut])
            return vectors, False

    async def _request(self, texts: list[str]) -> list[list[float]]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "input": texts}
        try:
            async with (
                aiohttp.ClientSession(timeout=self.timeout) as http,
                http.post(self.url, json=payload, headers=headers) as response,
            ):
                if response.status != 200:
                    said = without_secret(await response.text(errors="replace"), self.api_key)
                    body = truncate(said, 300)  # masked first: a cut could leave part of the key
                    refused = RefusedRequest if response.status in SIZE_REFUSALS else EmbedderUnavailable
                    raise refused(f"{self.url} answered {response.status}: {body}")
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
            vectors = [_values(item["embedding"]) for item in items]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise EmbedderUnavailable(f"{self.url} sent an unexpected answer: {exc!r}") from exc
        if len(vectors) != len(texts):
            raise EmbedderUnavailable(f"{self.url} sent {len(vectors)} vectors for {len(texts)} texts")
        if not all(map(math.isfinite, itertools.chain(*vectors))):
            raise EmbedderUnavailable(f"{self.url} sent vectors with non-finite values")
        return vectors
