"""Choosing `person_name`, the one alias the bot uses for a person, unique within a chat."""

from __future__ import annotations

from collections.abc import Collection

from memory.persons.names import clean_name, name_key
from memory.text import truncate

DEFAULT_MAX_CHARS = 16
_TAIL_LENGTHS = (4, 6)


def _fit(name: str, max_chars: int) -> str:
    return truncate(name, max_chars, ellipsis="").strip()


def _disambiguated(base: str, user_id: str, taken: set[str], max_chars: int) -> str:
    """`base` plus a suffix derived from the user id ("小红#1234"), deterministic for a given chat state:
    the shortest id tail that is free, then the full id, then a counter."""
    tail_source = "".join(ch for ch in user_id if ch.isalnum()) or user_id
    suffixes = [f"#{tail_source[-n:]}" for n in _TAIL_LENGTHS if len(tail_source) > n]
    suffixes.append(f"#{tail_source}")
    suffixes += [f"#{tail_source[-4:]}-{n}" for n in range(2, 1000)]
    for suffix in dict.fromkeys(suffixes):
        room = max(1, max_chars - len(suffix))
        candidate = _fit(base, room) + suffix
        if name_key(candidate) not in taken:
            return candidate
    raise RuntimeError(f"no free name for user {user_id!r} after 1000 tries")


def choose_person_name(
    card: str | None,
    nickname: str | None,
    user_id: str,
    taken: Collection[str],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The name the bot uses for a person in one chat.

    Preference: the group card, then the platform nickname, then the user id; each is cleaned
    (`clean_name`: whitespace collapsed, emoji/symbols trimmed, empty or emoji-only skipped) and cut
    to `max_chars` without splitting a character. `taken` holds the names other people already use in
    this chat (leave out this person's own current name); comparison ignores case, width and spacing.
    On a collision the first choice keeps its recognisable form and gets a deterministic suffix from
    the user id ("小红#1234") rather than switching to a name the group does not see.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValueError(f"user_id must be a non-empty string, got {user_id!r}")
    if max_chars < 2:
        raise ValueError(f"max_chars must be at least 2, got {max_chars}")
    base = ""
    for raw in (card, nickname, user_id):
        base = _fit(clean_name(raw or ""), max_chars)
        if name_key(base):
            break
    if not name_key(base):
        base = _fit(user_id.strip(), max_chars)
    taken_keys = {key for key in (name_key(t) for t in taken) if key}
    if name_key(base) not in taken_keys:
        return base
    return _disambiguated(base, user_id.strip(), taken_keys, max_chars)


def name_source(card: str | None, nickname: str | None) -> str:
    """Where `choose_person_name` takes the name from (it prefers the card, then the nickname)."""
    if name_key(clean_name(card or "")):
        return "card"
    return "nickname" if name_key(clean_name(nickname or "")) else "id"


def name_refusal(
    suggestion: str, taken: Collection[str], *, max_chars: int = DEFAULT_MAX_CHARS
) -> str | None:
    """Why `vet_suggested_name` refuses `suggestion`, in words an admin can act on; None when it is
    accepted."""
    name = clean_name(suggestion)
    if not name_key(name):
        return "it has no letter or digit (a name loses emoji, symbols and punctuation at its ends)"
    if len(name) > max_chars:
        return (
            f"it is {len(name)} characters, over the limit of {max_chars} "
            "([persons] person_name_max_chars; a name is never cut)"
        )
    if name_key(name) in {name_key(t) for t in taken}:
        return "another member of this chat is already called that (case, width and spacing aside)"
    return None


def vet_suggested_name(
    suggestion: str | None, taken: Collection[str], *, max_chars: int = DEFAULT_MAX_CHARS
) -> str | None:
    """Accept a suggested name (e.g. from an LLM, with its reason stored by the caller) only when it is
    name-like after cleaning, fits `max_chars` uncut, and collides with nobody in `taken`; else None."""
    if name_refusal(suggestion or "", taken, max_chars=max_chars) is not None:
        return None
    return clean_name(suggestion or "")
