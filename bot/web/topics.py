"""A chat's topics: packed ChatHistory rows (theme, true span, keywords, summary, count,
forget_times) and the topics still collecting in the topic cache."""

from __future__ import annotations

from aiohttp import web

from bot.web.context import app_of, chat_of, chat_title
from bot.web.html import bdi, chat_nav, h, page, table, when
from memory.history.view import TopicView, topic_views

routes = web.RouteTableDef()


def _span(view: TopicView) -> str:
    return f"{when(view.start)} – {when(view.end)}"


@routes.get(r"/chats/{chat_id:\d+}/topics")
async def chat_topics(request: web.Request) -> web.Response:
    chat = await chat_of(request)
    async with app_of(request).db.read() as session:
        views = await topic_views(session, chat.id)
    packed = [
        [
            v.id,
            v.theme,
            _span(v),
            ", ".join(v.keywords),
            v.summary,
            v.messages,
            ", ".join(v.participants),
            v.count,
            v.forget_times,
        ]
        for v in views
        if v.state == "history"
    ]
    cached = [
        [v.id, v.theme, _span(v), ", ".join(v.keywords), v.messages, v.fragments, v.no_update_checks]
        for v in views
        if v.state == "cache"
    ]
    body = h(
        "{}<h2>Topics (ChatHistory)</h2>{}<h2>Still collecting (topic cache)</h2>{}",
        chat_nav(chat.id, chat_title(chat)),
        table(
            [
                "id",
                "theme",
                "span",
                "keywords",
                "summary",
                "messages",
                "participants",
                "count",
                "forget_times",
            ],
            packed,
            "no packed topics yet",
        ),
        table(
            ["id", "title", "span", "keywords", "messages", "fragments", "idle checks"],
            cached,
            "nothing in the topic cache",
        ),
    )
    return page(
        request, f"Topics of {chat_title(chat)}", body, heading=h("Topics of {}", bdi(chat_title(chat)))
    )
