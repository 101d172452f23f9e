"""Base64 as Kubernetes reads it into a ``[]byte`` field (Secret data, ConfigMap binaryData, caBundle...).

Go's JSON decoder decodes such a string with ``base64.StdEncoding``: padding is required, and ``\\r`` and ``\\n``
are skipped wherever they are, so a certificate pasted from a PEM-like file with its line breaks is accepted.
The field holds the bytes, so a read gives them back in canonical base64, on one line. Anything else is refused
with Go's error, ``illegal base64 data at input byte N`` (N counting bytes of the string as sent).
"""

from __future__ import annotations

import base64
import binascii
import re

_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = b"\r\n"
_PAD = ord("=")
#: what StdEncoding accepts once line breaks are taken out: whole quanta, the last one possibly padded
_VALID = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class IllegalBase64(ValueError):
    """Go's base64.CorruptInputError."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")
        self.offset = offset


def decode(text: str) -> bytes:
    """The bytes ``text`` encodes, as Go's StdEncoding decodes them; IllegalBase64 where Go gives up."""
    raw = text.encode("utf-8", "surrogatepass")
    compact = raw.replace(b"\r", b"").replace(b"\n", b"") if b"\r" in raw or b"\n" in raw else raw
    if _VALID.fullmatch(compact):
        return base64.b64decode(compact)
    raise IllegalBase64(_error_offset(raw))


def canonical(text: str) -> str:
    """``text`` as Kubernetes gives it back once stored: the standard base64 of its bytes, on one line, unused low
    bits of the last quantum dropped (``text`` itself when it is already that, the common case)."""
    again = base64.b64encode(decode(text)).decode("ascii")
    return text if again == text else again


def is_valid(text: str) -> bool:
    try:
        decode(text)
    except (IllegalBase64, binascii.Error):
        return False
    return True


def _error_offset(src: bytes) -> int:
    """Where Go's decoder gives up on ``src``, which it does not take (its decodeQuantum, quantum by quantum;
    offsets count the line breaks it skipped)."""
    si = 0
    while si < len(src):
        j = 0
        while j < 4:
            if si == len(src):
                return si - j  # a quantum cut short: padding was due
            ch = src[si]
            si += 1
            if ch in _ALPHABET:
                j += 1
            elif ch in _NEWLINES:
                continue
            elif ch != _PAD or j < 2:
                return si - 1
            else:  # padding ends the data
                if j == 2:  # "==" is due: the first is read; the second may follow line breaks
                    while si < len(src) and src[si] in _NEWLINES:
                        si += 1
                    if si == len(src):
                        return si
                    if src[si] != _PAD:
                        return si - 1
                    si += 1
                while si < len(src) and src[si] in _NEWLINES:
                    si += 1
                return si  # what follows the padding is trailing garbage
    return len(src)
