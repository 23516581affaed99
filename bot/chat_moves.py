"""Chat merges as the bot makes them: when a platform moves a chat to a new id (a Telegram group
upgraded to a supergroup), and for `qunyi chats merge`. The merge itself is memory.chat_merge."""

from __future__ import annotations

import logging

from bot.app import App
from bot.config.settings import Settings
from memory.chat_merge import ChatMergeError, MergeReport, follow_move
from memory.types import ChatMoved

log = logging.getLogger(__name__)


def disabled_chat_hint(settings: Settings, report: MergeReport) -> str | None:
    """What to tell the admin when the merged chat is in `[reply] disabled_chats` (by its platform chat
    id or its `platform:id` key) and the chat it went into is not: the config is theirs to change, so
    it is left alone."""
    platform_id = report.source.partition(":")[2]
    target_id = report.target.partition(":")[2]
    disabled = set(settings.reply.disabled_chats)
    if not {platform_id, report.source} & disabled or {target_id, report.target} & disabled:
        return None
    return (
        f"{report.source} is in [reply] disabled_chats, {report.target} is not: add {target_id!r} there "
        "if the bot should stay quiet in it too"
    )


async def follow_chat_move(app: App, moved: ChatMoved) -> MergeReport | None:
    """Merge the memory of a chat the platform moved into the chat under its new id; None when
    nothing was left under the old id (the platform tells both chats; the second notice is a no-op)."""
    try:
        report = await follow_move(
            app.db,
            moved.platform,
            moved.old_chat_id,
            moved.new_chat_id,
            now=app.clock.now().timestamp(),
            notes=app.memory.notes,
        )
    except ChatMergeError as exc:
        log.error(
            "the memory of %s:%s did not follow it to %s: %s",
            moved.platform,
            moved.old_chat_id,
            moved.new_chat_id,
            exc,
        )
        return None
    if report is None:
        return None
    log.info("%s", report.summary())
    if app.persons is not None:
        app.persons.observer.forget_cache()
    if hint := disabled_chat_hint(app.settings, report):
        log.warning("%s", hint)
    return report
