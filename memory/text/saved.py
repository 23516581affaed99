"""Decoding a text file a person saved: a chat client's export, a spreadsheet's CSV."""


class UndecodableText(ValueError):
    """Bytes in none of the encodings `decode_saved` reads; the message says which and why."""


def decode_saved(raw: bytes) -> str:
    """`raw` as text: UTF-16 when it starts with a UTF-16 byte order mark, else UTF-8 (with or without
    its BOM), else GB18030 (what older QQ versions export and Excel saves a CSV as on Chinese Windows).

    Raises `UndecodableText` when it is none of them."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            reason = f"byte {exc.start}: {exc.reason}"
            raise UndecodableText(
                f"starts with a UTF-16 byte order mark but is not UTF-16 text ({reason})"
            ) from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return raw.decode("gb18030")
        except UnicodeDecodeError as exc:
            raise UndecodableText("neither UTF-8, UTF-16 nor GB18030 text") from exc
