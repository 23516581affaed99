"""Untrusted text as a log line shows it."""

from memory.text.truncate import truncate

LOG_EXCERPT_CHARS = 200

# Line breaks would forge log lines; NUL, ESC and the other C0/C1 controls reach terminals; bidi
# controls reorder what a terminal shows after them.
_ESCAPED = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in [
        *range(0x20),
        *range(0x7F, 0xA0),
        0x2028,
        0x2029,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    ]
}


def loggable(text: str, max_chars: int = LOG_EXCERPT_CHARS) -> str:
    """`text` cut to `max_chars` on a grapheme boundary, its control characters written as escapes
    (`\\x00`, `\\x0a`, `\\u202e`), so that a peer's bytes can neither forge a log line nor drive a
    terminal."""
    return truncate(text, max_chars).translate(_ESCAPED)
