"""JSON bytes that are kept.

orjson (3.12 and later) hands back a bytes object whose memory is its writer's whole buffer: at least 4 KB, and
a power of two above that for larger documents, while Python sees only the JSON's length. A pod of 800 bytes
kept as the store's record held 4 KB, so 150,000 pods took 600 MB where their JSON is 120 MB. What is kept for
long (the store's records and events, the spec memos, documents served as they are) goes through ``kept``, which
copies the JSON into a bytes object of its own size (about 0.2 µs for a pod); what is written out and dropped
(response bodies, watch lines) is not copied.

Also here: making a value with strings no JSON encoder takes (lone surrogates) encodable, as Go's decoders do.
"""

from __future__ import annotations

from typing import Any

import orjson


def kept(raw: bytes) -> bytes:
    """``raw`` in a bytes object of its own size."""
    return bytes(memoryview(raw))


def dumps_kept(obj: Any) -> bytes:
    """``orjson.dumps(obj)``, to be kept."""
    return kept(orjson.dumps(obj))


def without_surrogates(value: Any) -> Any:
    """``value`` with every lone UTF-16 surrogate in its strings replaced by U+FFFD, as Go's decoders do (YAML's
    ``\\ud800`` escapes, or a URL's undecodable bytes, would otherwise give strings no JSON encoder takes)."""
    if isinstance(value, str):
        if not any("\ud800" <= ch <= "\udfff" for ch in value):
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")  # pairs join, lone go
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    return value
