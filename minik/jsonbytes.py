"""JSON bytes that are kept.

orjson (3.12 and later) hands back a bytes object whose memory is its writer's whole buffer: at least 4 KB, and
a power of two above that for larger documents, while Python sees only the JSON's length. A pod of 800 bytes
kept as the store's record held 4 KB, so 150,000 pods took 600 MB where their JSON is 120 MB. What is kept for
long (the store's records and events, the spec memos, documents served as they are) goes through ``kept``, which
copies the JSON into a bytes object of its own size (about 0.2 µs for a pod); what is written out and dropped
(response bodies, watch lines) is not copied.
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
