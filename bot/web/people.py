"""People of a chat: cards, aliases, facts with links to their messages, timeline; renaming; adding and
removing facts; merging another account of the chat into a person; and forgetting a person (after a
confirmation page)."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy import func
from sqlalchemy import select as query

from bot.web import paging
from bot.web.context import app_of, chat_of, chat_title, path_int, seen_revision
from bot.web.html import (
    Safe,
    bdi,
    chat_nav,
    done,
    form,
    h,
    hidden,
    isolated,
    join,
    link,
    page,
    table,
    text_input,
    url,
    when,
)
from memory.models import Message
from memory.persons import timeline_text
from memory.persons.admin import PersonAdminError, check_forgettable
from memory.persons.member_search import MAX_MATCHES
from memory.persons.service import PersonMemory
from memory.persons.store import PersonRecord
from memory.service import ChatRef
from memory.storage.sql import stored_int
from memory.text import shown_name

routes = web.RouteTableDef()
PERSON = r"/chats/{chat_id:\d+}/people/{person_id:\d+}"


def _page(chat_id: int, person_id: int) -> str:
    """The path of a member's page (`PERSON`)."""
    return f"/chats/{chat_id}/people/{person_id}"


def _persons(request: web.Request) -> PersonMemory:
    persons = app_of(request).persons
    if persons is None:
        raise web.HTTPNotFound(text="people memory is not wired in this app")
    return persons


async def _person(request: web.Request) -> tuple[ChatRef, PersonRecord]:
    chat = await chat_of(request)
    person_id = path_int(request, "person_id")
    record = await _persons(request).record(chat.id, person_id)
    if record is None:
        raise web.HTTPNotFound(text=f"person {person_id} is not a member of chat {chat.id}")
    return chat, record


def _message_link(chat_id: int, message_id: int | None) -> Safe | str:
    return link(f"/chats/{chat_id}/messages/{message_id}", f"#{message_id}") if message_id else "—"


@routes.get(r"/chats/{chat_id:\d+}/people")
async def people_list(request: web.Request) -> web.Response:
    """The chat's members, most active first, a page at a time (`?offset=&limit=`)."""
    chat = await chat_of(request)
    shown = paging.window(request.query)
    records = await _persons(request).records(chat.id, shown.limit + 1, shown.offset)
    more = len(records) > shown.limit
    records = records[: shown.limit]
    rows = [
        [
            link(_page(chat.id, r.person_id), f"#{r.person_id}"),
            r.name,
            join((bdi(alias) for alias in list(r.view.aliases)[:8]), ", "),
            r.platform_user_id,
            r.message_count,
            len(r.facts),
            when(r.last_seen),
            _status(r),
        ]
        for r in records
    ]
    pager = paging.pager(request, f"/chats/{chat.id}/people", shown, len(records), more, "people")
    body = h(
        "{}{}{}{}",
        chat_nav(chat.id, chat_title(chat)),
        pager,
        table(
            ["id", "name", "also called", "user id", "messages", "facts", "last seen", ""], rows, "nobody yet"
        ),
        pager,
    )
    return page(
        request, f"People of {chat_title(chat)}", body, heading=h("People of {}", bdi(chat_title(chat)))
    )


@routes.get(PERSON)
async def person_show(request: web.Request) -> web.Response:
    chat, record = await _person(request)
    card = await _persons(request).card(chat.id, record.person_id)
    language = await app_of(request).memory.language(chat.id)
    base = _page(chat.id, record.person_id)
    aliases = [
        [a.alias, a.source, "global" if a.chat_id is None else a.chat_id, f"{a.weight:.2f}", a.count]
        for a in record.aliases
    ]
    facts = [
        [
            f.key,
            f.value,
            f.source,
            f"{f.confidence:.2f}",
            _message_link(chat.id, f.message_id),
            f.evidence,
            _remove_fact_form(request, base, f.key, f.value),
        ]
        for f in record.facts
    ]
    old = [
        [f.key, f.value, _message_link(chat.id, f.message_id), when(f.superseded_at)]
        for f in record.superseded
    ]
    timeline = [
        [
            when(t.time),
            timeline_text.shown(t.text, language),
            join((_message_link(chat.id, m) for m in t.message_ids), " "),
        ]
        for t in record.timeline
    ]
    body = h(
        "{}<h2>Card</h2><pre>{}</pre>{}<h2>Aliases</h2>{}<h2>Facts</h2>{}<p>{}</p><h2>Superseded facts</h2>{}"
        "<h2>Timeline</h2>{}<h2>Merge</h2>{}<h2>Forget</h2><p>{}</p>",
        chat_nav(chat.id, chat_title(chat)),
        card or "",
        form(
            request,
            f"{base}/rename",
            join((text_input("name", record.name, "name the bot uses here", 16), _seen(record))),
            "Rename",
        ),
        table(["alias", "source", "scope", "weight", "count"], aliases, "no aliases"),
        table(["key", "value", "source", "confidence", "message", "evidence", ""], facts, "no facts"),
        form(
            request,
            f"{base}/facts/add",
            join((text_input("key", "", "key", 12), text_input("value", "", "value", 24))),
            "Add a value",
        ),
        table(["key", "value", "message", "superseded"], old, "none"),
        table(["time", "event", "messages"], timeline, "no events"),
        await _merge_form(request, chat, record),
        _forget_link(base, record),
    )
    heading = h("{} (#{})", bdi(record.name), record.person_id)
    if record.left_at is not None:
        heading = h("{} — left the chat {}", heading, when(record.left_at))
    return page(request, f"{record.name} (#{record.person_id})", body, heading=heading)


def _status(record: PersonRecord) -> str:
    """The list's last column: the bot's own account, or a member who left the chat (and when)."""
    if record.is_bot:
        return "bot"
    return "" if record.left_at is None else f"left {when(record.left_at)}"


def _forget_link(base: str, record: PersonRecord) -> Safe | str:
    """The way to the forget page; none for the bot's own account, which is never forgotten."""
    return (
        "the bot's own account is never forgotten"
        if record.is_bot
        else link(f"{base}/forget", "Forget this person…")
    )


async def _merge_form(request: web.Request, chat: ChatRef, record: PersonRecord) -> Safe:
    """The form merging another member of the chat (a second account, a duplicate) into `record`, by
    person id; a search (`?find=`) lists a few members whose id or name matches, each a link that fills
    the id in (never the whole chat: it may have tens of thousands of members)."""
    base = _page(chat.id, record.person_id)
    find = request.query.get("find", "").strip()
    search = h(
        '<form method="get" action="{}" class="block">{} <button>Search</button></form>{}',
        base,
        text_input("find", find, "find a member by name or id", 16),
        await _merge_matches(request, chat, record, find) if find else "",
    )
    fields = h(
        "{} <label>{} really merge: their aliases, facts, timeline and messages become this person's "
        "(cannot be undone)</label> ",
        text_input("merged", request.query.get("merged", ""), "person id (#) to merge into this person", 8),
        Safe('<input type="checkbox" name="confirm" value="yes">'),
    )
    return join((search, form(request, f"{base}/merge", fields, "Merge", danger=True, inline=False)))


async def _merge_matches(request: web.Request, chat: ChatRef, record: PersonRecord, find: str) -> Safe:
    """The members `find` names (at most MAX_MATCHES), each a link filling its id into the merge form."""
    found = await _persons(request).find(chat.id, find, MAX_MATCHES + 1)
    base = _page(chat.id, record.person_id)
    rows = [
        [
            link(url(base, find=find, merged=r.person_id), f"#{r.person_id}"),
            r.name,
            r.platform_user_id,
            r.message_count,
            "this person" if r.person_id == record.person_id else _status(r),
        ]
        for r in found[:MAX_MATCHES]
    ]
    none = f"no member of this chat matches {shown_name(find)!r}"
    more = h('<p class="muted">only the first {} shown: refine the search</p>', MAX_MATCHES)
    matches = table(["id", "name", "user id", "messages", ""], rows, none)
    return join((matches, more if found[MAX_MATCHES:] else ""))


def _merged_id(value: str) -> int:
    """The person id the merge form names (`12` or `#12`); a clear error for anything else."""
    bare = value.strip().removeprefix("#").strip()
    if not bare:
        raise PersonAdminError("give the id of the person to merge into this one (search by name to find it)")
    person_id = stored_int(bare)
    if person_id is None:
        raise PersonAdminError(
            f"{shown_name(value)!r} is not a person id: give the #id of the person to merge "
            "(search by name to find it)"
        )
    return person_id


@routes.post(PERSON + "/merge")
async def person_merge(request: web.Request) -> web.Response:
    """Merge the member the form names (`merged`: a person id) into the person of the path (`qunyi
    people merge`)."""
    chat, record = await _person(request)
    data = await request.post()
    merged_id = _merged_id(str(data.get("merged") or ""))
    if data.get("confirm") != "yes":
        raise PersonAdminError("tick 'really merge' to merge the two")
    persons = _persons(request)
    if await persons.record(chat.id, merged_id) is None:
        raise PersonAdminError(f"person {merged_id} is not a member of chat {chat.id}")
    await persons.admin.merge(record.person_id, merged_id)
    raise done(
        request,
        _page(chat.id, record.person_id),
        f"merged #{merged_id} into #{record.person_id}",
    )


def _seen(record: PersonRecord) -> Safe:
    """The name's revision as the page shows it: a rename made meanwhile is refused, not overwritten."""
    return hidden("revision", record.name_revision)


@routes.post(PERSON + "/rename")
async def person_rename(request: web.Request) -> web.Response:
    """Rename the person in this chat; a 409 when the name changed since the page was opened."""
    chat, record = await _person(request)
    data = await request.post()
    name = str(data.get("name", ""))
    app = app_of(request)
    chosen = await _persons(request).admin.rename(
        chat.id,
        record.person_id,
        name,
        now=app.clock.now(),
        reason="admin (web)",
        expected_revision=seen_revision(data),
    )
    raise done(request, _page(chat.id, record.person_id), f"renamed to {isolated(chosen)}")


def _remove_fact_form(request: web.Request, base: str, key: str, value: str) -> Safe:
    """The button removing one value of a fact (the others of its key stay)."""
    return form(request, f"{base}/facts/remove", join((hidden("key", key), hidden("value", value))), "Remove")


@routes.post(PERSON + "/facts/add")
async def person_fact_add(request: web.Request) -> web.Response:
    """Add one value of a key by hand, keeping the others (`qunyi people edit --add-fact`)."""
    chat, record = await _person(request)
    data = await request.post()
    key, value = str(data.get("key", "")).strip(), str(data.get("value", "")).strip()
    added = await _persons(request).admin.add_fact(
        chat.id, record.person_id, key, value, now=app_of(request).clock.now()
    )
    said = f"added {key} = {value}" if added else f"{key} = {value} was already there"
    raise done(request, _page(chat.id, record.person_id), said)


@routes.post(PERSON + "/facts/remove")
async def person_fact_remove(request: web.Request) -> web.Response:
    """Remove one value of a key (`qunyi people edit --remove-fact KEY=VALUE`)."""
    chat, record = await _person(request)
    data = await request.post()
    key, value = str(data.get("key", "")), str(data.get("value", ""))
    await _persons(request).admin.remove_fact(
        chat.id, record.person_id, key, value, now=app_of(request).clock.now()
    )
    raise done(request, _page(chat.id, record.person_id), f"removed {key} = {value}")


@routes.get(PERSON + "/forget")
async def person_forget_confirm(request: web.Request) -> web.Response:
    """The confirmation page: what will be deleted, and the button that does it (never for the bot)."""
    chat, record = await _person(request)
    check_forgettable(record.person_id, record.platform_user_id, record.is_bot)
    app = app_of(request)
    checked = Safe(" checked" if app.settings.persons.forget_removes_messages else "")
    async with app.db.read() as session:  # forgetting deletes them in every chat, not only this one
        everywhere = await session.scalar(
            query(func.count()).select_from(Message).where(Message.person_id == record.person_id)
        )
    fields = h(
        '<input type="hidden" name="confirm" value="yes">'
        '<p><label><input type="checkbox" name="remove_messages" value="yes"{}> also delete their {} raw '
        "messages (in every chat; {} in this one)</label></p>",
        checked,
        everywhere or 0,
        record.message_count,
    )
    body = h(
        "<p>Forget <b>{}</b> (#{}) in every chat: facts, timeline, aliases, names and cards are deleted, "
        "and their messages are never consolidated into a profile again. This cannot be undone.</p>{}",
        bdi(record.name),
        record.person_id,
        form(
            request,
            f"{_page(chat.id, record.person_id)}/forget",
            fields,
            "Forget for good",
            danger=True,
            inline=False,
        ),
    )
    return page(request, f"Forget {record.name}?", body, heading=h("Forget {}?", bdi(record.name)))


@routes.post(PERSON + "/forget")
async def person_forget(request: web.Request) -> web.Response:
    chat, record = await _person(request)
    data = await request.post()
    if data.get("confirm") != "yes":
        raise web.HTTPSeeOther(f"{_page(chat.id, record.person_id)}/forget")
    app = app_of(request)
    report = await _persons(request).admin.forget(
        record.person_id, remove_messages=data.get("remove_messages") == "yes", now=app.clock.now()
    )
    raise done(
        request,
        f"/chats/{chat.id}/people",
        f"forgot #{report.person_id}: {report.facts} facts, {report.timeline} timeline entries, "
        f"{report.aliases} aliases, {report.names} names, {report.messages_removed} messages removed",
    )
