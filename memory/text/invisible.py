"""Characters that show nothing or only reorder what is around them: Unicode's default-ignorable code
points (zero-width characters, bidirectional controls, soft hyphens, Hangul fillers, tags, variation
selectors...). In a name they let one member pass for another (a zero-width space or a soft hyphen
makes "小\u200b红" look like "小红" without matching it), make a name that shows as blank (a Hangul
filler) or turn the line that shows the name around (an RTL override), so names lose them; message text
keeps them (it is stored as sent)."""

from __future__ import annotations

import regex

# Kept where they belong to what they follow (the alternatives below): the zero-width joiner, variation
# selectors (standard, ideographic and Mongolian) and tag characters.
_JOINER = "\u200d"
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef\u180b-\u180d\u180f"
_TAGS = "\U000e0020-\U000e007f"
_ALWAYS = rf"[\p{{Default_Ignorable_Code_Point}}--[{_JOINER}{_SELECTORS}{_TAGS}]]"
# A zero-width joiner is kept where it joins two emoji into one (👨‍👩‍👧, 🏳️‍🌈, 👩🏽‍💻), and dropped
# elsewhere.
_STRAY_JOINER = (
    r"(?<!\p{Extended_Pictographic}\p{Grapheme_Cluster_Break=Extend}*)\u200d"
    r"|\u200d(?!\p{Extended_Pictographic})"
)
# A variation selector is kept after a character it can vary (❤️, 1️⃣, an ideographic variant of a CJK
# character in a name), and dropped with nothing visible before it.
_STRAY_SELECTOR = rf"(?<![^\s\p{{Default_Ignorable_Code_Point}}])[{_SELECTORS}]"
# Tag characters are kept in an emoji tag sequence (the flag of England: 🏴 and tags), dropped elsewhere.
_STRAY_TAG = rf"(?<!\U0001f3f4[{_TAGS}]*)[{_TAGS}]"
_PATTERN = regex.compile(rf"{_ALWAYS}|{_STRAY_JOINER}|{_STRAY_SELECTOR}|{_STRAY_TAG}", regex.V1)
_ANY = regex.compile(r"\p{Default_Ignorable_Code_Point}")


def drop_invisible(text: str) -> str:
    """`text` without the characters that show nothing (Unicode's default-ignorable ones: zero-width
    and bidirectional controls, soft hyphens, Hangul fillers...); a zero-width joiner inside an emoji
    sequence, a variation selector after the character it varies and the tags of an emoji flag stay, so
    no emoji or ideographic variant is split. Empty when `text` held nothing else."""
    return _PATTERN.sub("", text)


def holds_invisible(text: str) -> bool:
    """Whether `text` holds a character that shows nothing, kept or not: False means `drop_invisible`
    returns it unchanged. A quick test (one character class, no lookaround) for long texts and many
    rows; `drop_invisible` says what is actually dropped."""
    return _ANY.search(text) is not None
