"""Console lists shown a page at a time: the window a query asks for (`offset`, `limit`) and the links to
the pages before and after it, under the same filters."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from multidict import MultiMapping

from bot.web.context import int_param
from bot.web.html import Safe, h, join, link, url


@dataclass(frozen=True, slots=True)
class Window:
    """Which rows of a list a page shows: `limit` of them from `offset` (0 is the first)."""

    offset: int
    limit: int


DEFAULT_LIMIT = 100  # rows a page shows when the query does not say (`?limit=`)
MAX_LIMIT = 1000  # the most rows a page shows, whatever the query says


def window(query: MultiMapping[str], default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> Window:
    """The `offset` and `limit` of a query (a clear 400 when not whole numbers); a limit above `maximum`
    is lowered to it."""
    limit = int_param(query.get("limit"), "limit", default, minimum=1) or default
    return Window(int_param(query.get("offset"), "offset", 0) or 0, min(limit, maximum))


def query_without(request: web.Request, *names: str) -> dict[str, list[str]]:
    """The request's query parameters (every value of each) less `names`, for links back to it."""
    return {k: request.query.getall(k) for k in dict.fromkeys(request.query) if k not in names}


def pager(
    request: web.Request, path: str, shown_window: Window, shown: int, more: bool, noun: str = "entries"
) -> Safe:
    """Which rows the page shows (`shown` of them; `more` when a next page has some), with links to the
    previous and next pages of `path` under the request's other parameters."""
    start, limit = shown_window.offset, shown_window.limit
    if not shown and not start:
        return Safe("")
    query = query_without(request, "offset")
    links = [
        h("{} {}–{}", noun, start + 1, start + shown) if shown else h("no {} from {} on", noun, start + 1)
    ]
    if start:
        links.append(link(url(path, **query, offset=max(start - limit, 0) or None), "← previous"))
    if more:
        links.append(link(url(path, **query, offset=start + limit), "next →"))
    return h('<p class="pager">{}</p>', join(links, " · "))
