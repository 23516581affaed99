"""One group message as several of the bot's QQ accounts receive it.

Every account of ours in a group gets its own event for each message there, so with two accounts
connected each message was recorded twice. go-cqhttp and Lagrange.OneBot give every account the same
`message_id` (derived from the group's message sequence), so the store's (chat, message id) key kept one
of them; NapCat numbers messages per account (its short ids), and only its newer versions post the
group's shared sequence (`real_seq`). A copy is therefore known by, in this order: the same message id
from the same sender; the same shared sequence; or, lacking both, the same sender and content within
`COPY_WINDOW_SECONDS` (the content as `_content` compares it: what each account renders its own way,
an @'s name, a quote, a media link, left out; a reply's target as recorded). A copy is always one
received by another account: two messages one account received are two messages, however alike; and
each recorded message takes at most one copy from each other account (a member sending the same words
twice still leaves two).

The first copy is recorded under its own id; a later copy's id then names that recorded message in
the recall notices and replies the other account posts (`recorded_id`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace

from memory.types import ChatMessage, Segment, SegmentKind

COPY_WINDOW_SECONDS = 5.0
"""How far apart two accounts' events for one message may be dated (OneBot's time is in seconds, and
an answer the bot sent is dated by the local clock)."""
_PER_CHAT = 256  # the latest messages of a chat a copy is looked for among
_CHATS = 1024
_ALIASES = 4096


@dataclass(slots=True)
class _Recorded:
    """A message as recorded, and the accounts whose copy of it has been seen."""

    message_id: str
    sender_id: str
    content: tuple[tuple[str, str], ...]
    time: float
    seq: str | None
    accounts: set[str] = field(default_factory=set)

    def is_copy(self, message: ChatMessage, seq: str | None) -> bool:
        """Whether `message` (received by an account this one's copy was not) is this message."""
        if message.sender_id != self.sender_id:
            return False
        if message.message_id == self.message_id:
            return True
        if seq is not None and self.seq is not None:
            return seq == self.seq
        return (
            _content(message) == self.content
            and abs(message.time.timestamp() - self.time) <= COPY_WINDOW_SECONDS
        )


class AccountCopies:
    """The group messages recorded lately, to tell another account's copy of one from a new message."""

    def __init__(self) -> None:
        self._chats: OrderedDict[str, deque[_Recorded]] = OrderedDict()
        self._aliases: OrderedDict[str, str] = OrderedDict()

    def copy_of(self, chat: str, account: str, message: ChatMessage, seq: str | None = None) -> str | None:
        """The id of the recorded message that `message`, received by `account` in `chat`, is a copy of;
        None when it is a new message, which is then remembered as recorded. `seq` is the group's
        sequence number of the message, when the event carries it."""
        recent = self._chats.get(chat)
        if recent is None:
            recent = self._chats[chat] = deque(maxlen=_PER_CHAT)
            while len(self._chats) > _CHATS:
                self._chats.popitem(last=False)
        self._chats.move_to_end(chat)
        original = next((r for r in recent if account not in r.accounts and r.is_copy(message, seq)), None)
        if original is None:
            recent.append(
                _Recorded(
                    message.message_id,
                    message.sender_id,
                    _content(message),
                    message.time.timestamp(),
                    seq,
                    {account},
                )
            )
            return None
        original.accounts.add(account)
        if message.message_id != original.message_id:
            self._aliases[_alias_key(chat, account, message.message_id)] = original.message_id
            while len(self._aliases) > _ALIASES:
                self._aliases.popitem(last=False)
        return original.message_id

    def recorded_id(self, chat: str, account: str, message_id: str) -> str:
        """The id the message `account` calls `message_id` in `chat` is recorded under."""
        return self._aliases.get(_alias_key(chat, account, message_id), message_id)

    def replying_to_recorded(self, chat: str, account: str, message: ChatMessage) -> ChatMessage:
        """`message` (received by `account`) with the message it replies to named by its recorded id."""
        if message.reply_to is None:
            return message
        target = self.recorded_id(chat, account, message.reply_to)
        if target == message.reply_to:
            return message
        segments = tuple(
            Segment(SegmentKind.REPLY, s.text, target)
            if s.kind is SegmentKind.REPLY and s.target == message.reply_to
            else s
            for s in message.segments
        )
        return replace(message, reply_to=target, segments=segments)


def _content(message: ChatMessage) -> tuple[tuple[str, str], ...]:
    """What two accounts' events for one message hold alike: its segments, an @ by whom it names (each
    account fills in the names it knows), a reply by the message it answers (as recorded:
    `replying_to_recorded`) without its quote, a media segment without its link (signed per account)."""
    by_target = (SegmentKind.MENTION, SegmentKind.REPLY)
    return tuple(
        (s.kind.value, (s.target or "") if s.kind in by_target else s.text) for s in message.segments
    )


def _alias_key(chat: str, account: str, message_id: str) -> str:
    return f"{chat}\x00{account}\x00{message_id}"
