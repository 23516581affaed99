"""How much of one message the analyses read (jargon, persons, preferences, topics).

A message may hold up to a million characters and is stored whole, and the full-text index covers all
of it (jieba's cut is linear: about a second for a million characters). The analyses are not: their
statistics, speech masks and name searches cost tens of microseconds a character, and a single
300,000-character message kept a job's worker thread busy for minutes. What they look for (a term, a
declared name, a stated preference, what a message is about) is in a chat-sized message or in the
opening of a long one, so they read at most ANALYSED_CHARS characters of each message.
"""

from memory.text.truncate import truncate

# Some 0.1-0.3 s of analysis per message; a hundred times a long chat message.
ANALYSED_CHARS = 20_000


def analysed(text: str, limit: int = ANALYSED_CHARS) -> str:
    """`text` itself when it holds at most `limit` characters, else its longest prefix of at most
    `limit` characters that ends on a grapheme boundary (no ellipsis: the analyses read words)."""
    return truncate(text, limit, ellipsis="")
