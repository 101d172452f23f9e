"""Base64 read as Go's StdEncoding reads a []byte field: line breaks skipped, padding required, Go's error offsets."""

from __future__ import annotations

import base64

import pytest

from minik.api import gobytes


@pytest.mark.parametrize(("text", "canonical"), [
    ("YWJj\nZGVm", "YWJjZGVm"),
    ("YWJj\r\nZGVm\r\n", "YWJjZGVm"),
    ("\nYQ=\n=\n", "YQ=="),  # even between the padding characters
    ("YR==", "YQ=="),  # unused low bits are dropped with the bytes' round trip
    ("", ""),
])
def test_line_breaks_are_skipped_and_the_bytes_come_back_canonical(text: str, canonical: str) -> None:
    assert gobytes.canonical(text) == canonical


def test_a_certificate_wrapped_at_76_columns_decodes_to_its_bytes() -> None:
    data = bytes(range(256)) * 4
    wrapped = base64.encodebytes(data).decode()  # 76-character lines, each ending in \n
    assert "\n" in wrapped.rstrip("\n")
    assert gobytes.decode(wrapped) == data
    assert gobytes.canonical(wrapped) == base64.b64encode(data).decode()


@pytest.mark.parametrize(("text", "offset"), [
    ("YWJjZA", 4),  # a quantum cut short: Go points at its start
    ("YQ=", 3),  # "==" was due: Go points past the end
    ("YWJjZA=x", 6),
    ("YQ==YQ==", 4),  # data after the padding
    ("not base64!", 3),
    ("ab\ncd\ne?", 7),  # offsets count the line breaks skipped
    ("é", 0),
    ("=", 0),
])
def test_what_go_refuses_is_refused_with_its_offset(text: str, offset: int) -> None:
    with pytest.raises(gobytes.IllegalBase64) as refused:
        gobytes.decode(text)
    assert str(refused.value) == f"illegal base64 data at input byte {offset}"
