"""Headers of the files the API hands out as downloads."""

from __future__ import annotations

from urllib.parse import quote

_UNSAFE_IN_QUOTES = '"\\%'  # a quoted-string's own syntax, and what browsers may decode


def attachment(filename: str) -> str:
    """``Content-Disposition`` for a download named ``filename`` (RFC 6266): ``filename=`` in
    printable ASCII for every client and, when the name is not that (a Chinese name, a
    quote), also ``filename*=`` in UTF-8, percent-encoded (RFC 5987), which clients prefer."""
    fallback = "".join(
        char if " " <= char <= "~" and char not in _UNSAFE_IN_QUOTES else "_" for char in filename
    )
    value = f'attachment; filename="{fallback}"'
    if fallback != filename:
        encoded = quote(filename.encode("utf-8", "replace"), safe="")
        value += f"; filename*=UTF-8''{encoded}"
    return value
