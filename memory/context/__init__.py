"""The pre-reply context: sections from memory, each under its budget, rendered as quoted data."""

from memory.context.builder import (
    ContextBuilder,
    ContextProvider,
    ContextRequest,
    ContextSection,
    ReplyContext,
)

__all__ = ["ContextBuilder", "ContextProvider", "ContextRequest", "ContextSection", "ReplyContext"]
