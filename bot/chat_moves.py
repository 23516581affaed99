"""Chat merges as the bot makes them: when a platform moves a chat to a new id (a Telegram group
upgraded to a supergroup), and for `qunyi chats merge`. The merge itself is memory.chat_merge."""

from __future__ import annotations

import asyncio
import logging

from bot.app import App
from bot.config.settings import Settings
from bot.reply.pipeline import while_locked
from memory.chat_merge import ChatMergeError, MergeReport, follow_move
from memory.recall.scope import is_listed
from memory.storage import DatabaseLocked
from memory.types import ChatMoved

log = logging.getLogger(__name__)


def chat_setting_hints(settings: Settings, report: MergeReport) -> list[str]:
    """What to tell the admin when the merged chat is named (by its platform chat id or its
    `platform:id` key) in a setting that keeps a chat apart, `[reply] disabled_chats` or `[recall]
    global_blacklist`, and the chat it went into is not: its memory now follows the other chat's
    settings (a blacklisted chat's memory may then be recalled in other chats). The config is theirs to
    change, so it is left alone."""
    hints = []
    source, target = report.source.partition(":"), report.target.partition(":")
    for table, key, listed, effect in (
        ("reply", "disabled_chats", settings.reply.disabled_chats, "if the bot should stay quiet in it too"),
        (
            "recall",
            "global_blacklist",
            settings.recall.global_blacklist,
            f"to keep what was remembered of {report.source} from being recalled in other chats",
        ),
    ):
        if is_listed(source[0], source[2], listed) and not is_listed(target[0], target[2], listed):
            hints.append(
                f"{report.source} is in [{table}] {key}, {report.target} is not: add {target[2]!r} there "
                f"{effect}"
            )
    return hints


async def follow_chat_move(
    app: App, moved: ChatMoved, stopping: asyncio.Event | None = None
) -> MergeReport | None:
    """Merge the memory of a chat the platform moved into the chat under its new id; None when
    nothing was left under the old id (the platform tells both chats; the second notice is a no-op)
    or the merge could not be made (logged). The platform does not tell again, so a database locked by
    another process is waited out, as for a message, until `stopping` is set."""
    old, new = f"{moved.platform}:{moved.old_chat_id}", f"{moved.platform}:{moved.new_chat_id}"
    try:
        report = await while_locked(
            lambda: follow_move(
                app.db,
                moved.platform,
                moved.old_chat_id,
                moved.new_chat_id,
                now=app.clock.now().timestamp(),
                notes=app.memory.notes,
            ),
            f"the move of {old} to {new}",
            stopping or asyncio.Event(),
        )
    except ChatMergeError as exc:
        log.error("the memory of %s did not follow it to %s: %s", old, new, exc)
        return None
    except DatabaseLocked as exc:  # the bot is stopping
        log.error(
            "the memory of %s did not follow it to %s: %s; to move it: qunyi chats merge -- %s %s",
            old,
            new,
            exc,
            old,
            new,
        )
        return None
    if report is None:
        return None
    log.info("%s", report.summary())
    app.memory.forget_chats(report.chat_ids)
    if app.persons is not None:
        app.persons.observer.forget_cache()
    for hint in chat_setting_hints(app.settings, report):
        log.warning("%s", hint)
    return report
