"""Secrets kept out of text people see: an error a server sent may quote the key it refused."""

from __future__ import annotations

SECRET_MASK = "<api key>"
MIN_MASKED_CHARS = 8
"""A secret shorter than this is left: masking it would cut ordinary words out of the text."""


def without_secret(text: str, secret: str) -> str:
    """`text` (a provider's error, a connection failure) with every occurrence of `secret` masked.
    Some OpenAI-compatible servers quote the API key they refused, and such reasons go to the log, the
    usage ledger, `/usage` and `qunyi doctor`."""
    if len(secret) < MIN_MASKED_CHARS:
        return text
    return text.replace(secret, SECRET_MASK)
