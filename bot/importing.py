"""Recording an importer's messages and issues in batches, as `qunyi import` and `qunyi bench --import` do."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice

from adapters.importers import ImportIssue, ImportItem, IssueKind
from adapters.importers.base import id_clash
from bot.app import App
from memory.types import ChatKind, ChatMessage, MembershipChange

BATCH = 2000
"""Messages recorded per transaction: large enough that a batch's fixed costs (its chats' stored ids,
the turn windows) are spread thin, small enough that a live bot sharing the database waits little."""


@dataclass(slots=True)
class ImportTotals:
    """What an import did with the entries it read."""

    created: int = 0
    duplicates: int = 0
    erased: int = 0  # messages of people who had them deleted on request, passed over
    malformed: int = 0  # broken entries and messages whose id held other text
    skipped: int = 0  # well-formed entries that are no chat message (pins, empty, joins not applied)
    memberships: int = 0  # entries of members leaving or joining, applied (memory.membership)
    # `platform:id` of each chat the export says is private that memory keeps as a group: made a group
    # earlier (an older import, or the live bot: a chat row does not say which), so not changed silently
    kept_as_group: list[str] = field(default_factory=list)


async def record_import(
    app: App,
    items: Iterable[ImportItem],
    source: str,
    on_malformed: Callable[[ImportIssue], None],
    batch: int | None = None,
) -> ImportTotals:
    """Record the messages of `items` through `MemoryService.record_many`, `batch` per transaction
    (BATCH when None), apply each batch's members leaving and joining after its messages, and count
    the issues. `on_malformed` hears of each entry not imported for being
    broken as it comes (`source` names the file for a message whose id its chat holds with other text)."""
    totals = ImportTotals()
    size = BATCH if batch is None else batch
    rest = iter(items)
    private: dict[tuple[str, str], None] = {}
    while chunk := list(islice(rest, size)):
        messages = [item for item in chunk if isinstance(item, ChatMessage)]
        private |= {(m.platform, m.chat_id): None for m in messages if m.chat_kind is ChatKind.PRIVATE}
        for issue in (item for item in chunk if isinstance(item, ImportIssue)):
            if issue.kind is IssueKind.MALFORMED:
                totals.malformed += 1
                on_malformed(issue)
            else:
                totals.skipped += 1
        report = await app.memory.record_many(messages, size)
        totals.created += report.created
        for clash in report.clashes:
            totals.malformed += 1
            on_malformed(id_clash(source, clash))
        totals.duplicates += report.duplicates
        totals.erased += report.erased
        # after the batch's messages: a leave is judged against the member's messages before it
        for change in (item for item in chunk if isinstance(item, MembershipChange)):
            await app.memory.change_membership(change)
            totals.memberships += 1
    for platform, chat_id in private:
        if await app.memory.chat_kind(platform, chat_id) is ChatKind.GROUP:
            totals.kept_as_group.append(f"{platform}:{chat_id}")
    return totals
