"""Jargon review: list with filters and batch decisions, one entry with its evidence in context,
approve / reject / edit / delete, adding a term by hand or importing a CSV / JSON dictionary, and the
JSON API (`/api/jargon`) for scripts."""

from __future__ import annotations

import json
from typing import Any, Literal

from aiohttp import web
from multidict import MultiMapping
from sqlalchemy.ext.asyncio import AsyncSession

from bot.web import paging
from bot.web.context import ACTOR, MAX_INT, app_of, int_param, path_int, seen_revision
from bot.web.html import (
    Safe,
    csrf_field,
    done,
    form,
    h,
    hidden,
    isolated,
    join,
    link,
    local_path,
    page,
    select,
    table,
    text_input,
    textarea,
    url,
    when,
)
from bot.web.overview import message_table
from memory import untrusted_json
from memory.jargon import dictionary, transfer
from memory.jargon.dictionary import DECISIONS, EntryView, JargonError
from memory.models import Chat
from memory.models.jargon import STATUSES
from memory.text import lone_surrogate_at, truncate

routes = web.RouteTableDef()
_FORMATS: dict[str, transfer.Format] = {"csv": "csv", "json": "json"}
MAX_ACTOR_CHARS = 64  # a longer "by" of the API is cut, on a grapheme boundary
Decision = Literal["approve", "reject"]
DONE = {"approve": "approved", "reject": "rejected"}  # what the page after a decision says
SKIPS_SHOWN = 3  # a batch's answer names this many of the entries it skipped (a flash is short)
_CONFIRM_DELETE = Safe('<label><input type="checkbox" name="confirm" value="yes"> really delete</label> ')


class JargonNotFound(JargonError):
    """No entry with that id (a 404)."""


def _filters(query: MultiMapping[str]) -> dict[str, Any]:
    statuses = [s for s in query.getall("status", []) if s]
    for status in statuses:
        if status not in STATUSES:
            raise JargonError(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
    shown = paging.window(query)
    return {
        "chat_id": int_param(query.get("chat"), "chat"),
        "statuses": statuses,
        "min_count": int_param(query.get("min_count"), "min_count", 0) or 0,
        "search": query.get("search", ""),
        "limit": shown.limit,
        "offset": shown.offset,
    }


async def _list(
    request: web.Request, extra: int = 0
) -> tuple[dict[str, Any], list[EntryView], dict[int, int]]:
    """The filters of the query, the entries they select (`extra` more than the limit) and their
    revisions, read together."""
    filters = _filters(request.query)
    async with app_of(request).db.read() as session:
        entries = await dictionary.list_entries(session, **{**filters, "limit": filters["limit"] + extra})
        revisions = await dictionary.revisions(session, [e.id for e in entries])
    return filters, entries, revisions


def _now(request: web.Request) -> float:
    return app_of(request).clock.now().timestamp()


def _flag(entry: EntryView) -> str:
    return {True: "jargon", False: "ordinary", None: "?"}[entry.is_jargon]


def _scope_cell(entry: EntryView) -> Safe | str:
    """Where an entry belongs: global, or a chat (and the global entry of the term beside it)."""
    if entry.chat_id is None:
        return "global"
    chat = link(f"/chats/{entry.chat_id}", f"chat {entry.chat_id}")
    if entry.shared_id is None:
        return chat
    return h("{}, beside global {}", chat, link(f"/jargon/{entry.shared_id}", f"#{entry.shared_id}"))


def _filter_form(filters: dict[str, Any]) -> Safe:
    statuses = {"": "any status", **{s: s for s in STATUSES}}
    chosen = filters["statuses"][0] if filters["statuses"] else ""
    return h(
        '<form method="get" action="/jargon" class="block">{} {} {} {} <button>Filter</button></form>',
        text_input("chat", filters["chat_id"] or "", "chat id", 6),
        select("status", statuses, chosen, "status"),
        text_input("min_count", filters["min_count"] or "", "min count", 4),
        text_input("search", filters["search"], "term contains", 12),
    )


@routes.get("/jargon")
async def jargon_list(request: web.Request) -> web.Response:
    """Entries, most counted first, with checkboxes for a batch approve or reject, a page at a time."""
    filters, entries, revisions = await _list(request, extra=1)
    more = len(entries) > filters["limit"]
    entries = entries[: filters["limit"]]
    rows = [
        [
            # The revision the row was seen at: a batch leaves an entry changed since undecided.
            h('<input type="checkbox" name="ids" value="{}:{}">', e.id, revisions.get(e.id, 0)),
            link(f"/jargon/{e.id}", e.content),
            e.count,
            e.status,
            e.provenance,
            _flag(e),
            _scope_cell(e),
            e.meaning or "—",
        ]
        for e in entries
    ]
    back = url("/jargon", **paging.query_without(request))
    batch = h(
        '<form method="post" action="/jargon/batch">{}{}{}'
        '<p><label>meaning for approved (optional) <input name="meaning" size="40"></label> '
        '<button name="action" value="approve">Approve selected</button> '
        '<button name="action" value="reject" class="danger">Reject selected</button></p></form>',
        csrf_field(request),
        hidden("back", back),
        table(["", "term", "count", "status", "provenance", "kind", "scope", "meaning"], rows, "no entries"),
    )
    pager = paging.pager(
        request, "/jargon", paging.Window(filters["offset"], filters["limit"]), len(entries), more
    )
    return page(
        request, "Jargon review", join((_filter_form(filters), pager, batch, pager, _add_forms(request)))
    )


def _add_forms(request: web.Request) -> Safe:
    scope = text_input("chat", "", "chat id (empty = every chat)", 6)
    add = form(
        request,
        "/jargon/add",
        join((text_input("content", "", "term", 12), text_input("meaning", "", "meaning", 40), scope)),
        "Add term",
        inline=False,
    )
    formats = select("format", {"csv": "CSV (header with 'content')", "json": "JSON"}, "csv", "format")
    area = textarea("text", "", 5, 70)
    dictionary_import = form(
        request, "/jargon/import", join((area, formats, scope)), "Import dictionary", inline=False
    )
    return join((h("<h2>Add by hand</h2>"), add, h("<h2>Import</h2>"), dictionary_import))


async def _scope(session: AsyncSession, data: MultiMapping[Any]) -> int | None:
    """The chat id a form names (None: every chat), refused when there is no such chat."""
    chat_id = int_param(str(data.get("chat") or ""), "chat")
    if chat_id is not None and await session.get(Chat, chat_id) is None:
        raise JargonError(f"no chat with id {chat_id}")
    return chat_id


@routes.post("/jargon/add")
async def jargon_add(request: web.Request) -> web.Response:
    """One term with its meaning, approved by hand (a manual decision inference never overrides)."""
    data = await request.post()
    content = str(data.get("content") or "").strip()
    if not content:
        raise JargonError("give the term to add")
    async with app_of(request).db.write() as session:
        chat_id = await _scope(session, data)
        entry, created = await dictionary.add_manual(
            session, content, str(data.get("meaning") or ""), chat_id, ACTOR, _now(request)
        )
    raise done(request, f"/jargon/{entry.id}", "added" if created else "updated")


@routes.post("/jargon/import")
async def jargon_import(request: web.Request) -> web.Response:
    """A pasted CSV or JSON dictionary, as `qunyi jargon import` reads it; bad rows are listed."""
    data = await request.post()
    fmt = _FORMATS.get(str(data.get("format") or "csv"))
    if fmt is None:  # read as CSV, a JSON paste was refused for a CSV header it never had
        raise JargonError(f"format must be csv or json, not {truncate(str(data.get('format')), 20)!r}")
    rows, errors = transfer.parse(str(data.get("text") or ""), fmt)
    async with app_of(request).db.write() as session:
        chat_id = await _scope(session, data)
        report = await transfer.import_rows(session, rows, chat_id, ACTOR, _now(request))
    problems = sorted(errors + report.errors)
    summary = f"imported: {report.created} created, {report.updated} updated, {len(problems)} errors"
    if problems:
        summary += " (" + "; ".join(f"row {n}: {isolated(message)}" for n, message in problems[:5]) + ")"
    raise done(request, "/jargon", summary)


def _seen(values: list[str]) -> dict[int, int | None]:
    """The checked entries, each `id:revision` as the list showed it (a bare id, from an older page,
    has no revision: None)."""
    seen: dict[int, int | None] = {}
    for value in values:
        jargon_id, colon, revision = value.partition(":")
        number = int_param(jargon_id, "id")
        if number is not None:
            seen.setdefault(number, int_param(revision, "revision") if colon else None)
    return seen


@routes.post("/jargon/batch")
async def jargon_batch(request: web.Request) -> web.Response:
    """Approve or reject the checked entries in one transaction; those changed since the list was
    shown are left undecided, and the answer says which and why."""
    data = await request.post()
    action = next((d for d in DECISIONS if d == data.get("action")), None)
    if action is None:
        raise JargonError("choose approve or reject")
    seen = _seen([str(v) for v in data.getall("ids", [])])
    if not seen:
        raise JargonError("no entries selected")
    meaning = str(data.get("meaning", "")).strip() or None
    async with app_of(request).db.write() as session:
        decided, skipped = await dictionary.decide_seen(
            session, seen, action, ACTOR, _now(request), meaning if action == "approve" else None
        )
    summary = f"{DONE[action]} {len(decided)} entries"
    if skipped:
        reasons = "; ".join(isolated(s.why) for s in skipped[:SKIPS_SHOWN])
        more = f"; {len(skipped) - SKIPS_SHOWN} more" if len(skipped) > SKIPS_SHOWN else ""
        summary += f"; skipped {len(skipped)}, reload the list and decide them again: {reasons}{more}"
    raise done(request, local_path(data.get("back"), "/jargon"), summary)


async def _entry_with_trail(
    request: web.Request, jargon_id: int, with_evidence: bool = False
) -> tuple[EntryView, dict[int, int], list[dict[str, Any]], list[dictionary.Evidence], int]:
    """An entry with its per-chat counts, review trail, (optionally) evidence and the revision they
    were read at, all from one snapshot; 404 when unknown."""
    async with app_of(request).db.read() as session:
        entry = await dictionary.get(session, jargon_id)
        if entry is None:
            raise JargonNotFound(f"no jargon entry {jargon_id}")
        counts = await dictionary.chat_counts(session, jargon_id)
        trail = await dictionary.reviews(session, jargon_id)
        found = await dictionary.evidence(session, jargon_id, None) if with_evidence else []
        revision = await dictionary.revision(session, jargon_id)
    return entry, counts, trail, found, revision


@routes.get(r"/jargon/{jargon_id:\d+}")
async def jargon_show(request: web.Request) -> web.Response:
    """One entry: fields, per-chat counts, evidence messages in context, review trail, actions."""
    jargon_id = path_int(request, "jargon_id")
    entry, counts, trail, found, revision = await _entry_with_trail(request, jargon_id, with_evidence=True)
    seen = hidden("revision", revision)
    base = f"/jargon/{jargon_id}"
    facts = table(
        ["field", "value"],
        [
            ["term", entry.content],
            ["meaning", entry.meaning or "—"],
            ["status", entry.status],
            ["provenance", entry.provenance],
            ["kind", _flag(entry)],
            ["count", entry.count],
            ["last inference at count", entry.last_inference_count],
            ["scope", _scope_cell(entry)],
            ["decided", f"{entry.decided_by or '—'}"],
        ],
    )
    per_chat = table(["chat", "count"], [[link(f"/chats/{c}", c), n] for c, n in counts.items()], "not seen")
    evidence = join(
        h(
            "<h3>{} in chat {}</h3>{}",
            link(f"/chats/{e.message.chat_id}/messages/{e.message.id}", f"message #{e.message.id}"),
            e.message.chat_id,
            message_table(e.context, e.message.id),
        )
        for e in found
    ) or h('<p class="muted">no evidence kept</p>')
    kinds = {"": "unchanged", "jargon": "group jargon", "ordinary": "ordinary word"}
    actions = join(
        (
            form(
                request,
                f"{base}/approve",
                join((text_input("meaning", entry.meaning, "meaning", 40), seen)),
                "Approve",
            ),
            form(request, f"{base}/reject", seen, "Reject", danger=True),
            form(
                request,
                f"{base}/edit",
                join(
                    (
                        text_input("content", entry.content, "term", 16),
                        h("<label>meaning {}</label>", textarea("meaning", entry.meaning)),
                        select("kind", kinds, "", "kind"),
                        seen,
                    ),
                    " ",
                ),
                "Save edit",
                inline=False,
            ),
            form(
                request,
                f"{base}/delete",
                join((_CONFIRM_DELETE, seen)),
                "Delete",
                danger=True,
            ),
        )
    )
    review_rows = [
        [r["action"], r["actor"], when(r["time"]), json.dumps(r["new"], ensure_ascii=False)] for r in trail
    ]
    body = h(
        "{}<h2>Actions</h2>{}<h2>Counts per chat</h2>{}<h2>Evidence</h2>{}<h2>Review trail</h2>{}",
        facts,
        actions,
        per_chat,
        evidence,
        table(["action", "by", "time", "after"], review_rows, "no reviews yet"),
    )
    return page(request, f"Jargon: {entry.content}", body)


async def _decide_one(request: web.Request, action: Decision) -> web.Response:
    jargon_id = path_int(request, "jargon_id")
    data = await request.post()
    meaning = str(data.get("meaning", "")).strip() if action == "approve" else ""
    async with app_of(request).db.write() as session:
        await dictionary.decide(
            session, [jargon_id], action, ACTOR, _now(request), meaning or None, seen_revision(data)
        )
    raise done(request, f"/jargon/{jargon_id}", DONE[action])


@routes.post(r"/jargon/{jargon_id:\d+}/approve")
async def jargon_approve(request: web.Request) -> web.Response:
    return await _decide_one(request, "approve")


@routes.post(r"/jargon/{jargon_id:\d+}/reject")
async def jargon_reject(request: web.Request) -> web.Response:
    return await _decide_one(request, "reject")


@routes.post(r"/jargon/{jargon_id:\d+}/edit")
async def jargon_edit(request: web.Request) -> web.Response:
    """Change the term, meaning and kind by hand (inference never overwrites it afterwards)."""
    jargon_id = path_int(request, "jargon_id")
    data = await request.post()
    content = data.get("content")
    meaning = data.get("meaning")
    kind = {"jargon": True, "ordinary": False}.get(str(data.get("kind", "")))
    async with app_of(request).db.write() as session:
        await dictionary.edit(
            session,
            jargon_id,
            ACTOR,
            _now(request),
            meaning=meaning if isinstance(meaning, str) else None,
            content=content if isinstance(content, str) and content.strip() else None,
            is_jargon=kind,
            expected_revision=seen_revision(data),
        )
    raise done(request, f"/jargon/{jargon_id}", "saved")


@routes.post(r"/jargon/{jargon_id:\d+}/delete")
async def jargon_delete(request: web.Request) -> web.Response:
    jargon_id = path_int(request, "jargon_id")
    data = await request.post()
    if data.get("confirm") != "yes":
        raise JargonError("tick 'really delete' to delete the entry")
    async with app_of(request).db.write() as session:
        await dictionary.remove(session, [jargon_id], ACTOR, _now(request), seen_revision(data))
    raise done(request, "/jargon", f"deleted entry {jargon_id}")


# -- JSON API -------------------------------------------------------------------------------------


@routes.get("/api/jargon")
async def api_list(request: web.Request) -> web.Response:
    """`GET /api/jargon?chat=&status=&min_count=&search=&limit=&offset=` → `{"entries": [...]}`."""
    _filters_used, entries, _revisions = await _list(request)
    return web.json_response({"entries": [e.to_json() for e in entries]}, dumps=_dumps)


@routes.get(r"/api/jargon/{jargon_id:\d+}")
async def api_show(request: web.Request) -> web.Response:
    jargon_id = path_int(request, "jargon_id")
    entry, counts, trail, _evidence, _revision = await _entry_with_trail(request, jargon_id)
    return web.json_response(
        {"entry": entry.to_json(), "chat_counts": counts, "reviews": trail}, dumps=_dumps
    )


@routes.post("/api/jargon/decide")
async def api_decide(request: web.Request) -> web.Response:
    """`POST {"ids": [1, 2], "action": "approve"|"reject", "meaning"?: str, "by"?: str}`."""
    try:
        payload = await request.json(loads=untrusted_json.loads)
    except ValueError:
        raise JargonError("the body must be JSON") from None
    if not isinstance(payload, dict):
        raise JargonError("the body must be a JSON object")
    action, ids, meaning, actor = (payload.get(k) for k in ("action", "ids", "meaning", "by"))
    if action not in ("approve", "reject"):
        raise JargonError('"action" must be "approve" or "reject"')
    if not isinstance(ids, list) or not ids or not all(_is_entry_id(i) for i in ids):
        raise JargonError('"ids" must be a non-empty list of entry ids')
    if meaning is not None and not isinstance(meaning, str):
        raise JargonError('"meaning" must be a string')
    if isinstance(actor, str) and lone_surrogate_at(actor) is not None:
        raise JargonError('"by" is not valid Unicode (it holds a lone surrogate)')
    who = actor if isinstance(actor, str) and actor.strip() else "api"
    async with app_of(request).db.write() as session:
        decided = await dictionary.decide(
            session, ids, action, truncate(who.strip(), MAX_ACTOR_CHARS, ellipsis=""), _now(request), meaning
        )
    return web.json_response({"entries": [e.to_json() for e in decided]}, dumps=_dumps)


def _is_entry_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_INT


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)
