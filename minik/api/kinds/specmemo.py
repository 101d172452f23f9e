"""Answers about pod specs, remembered by the spec's JSON.

Pods stamped from one template (a ReplicaSet's, a Job's, a benchmark's) carry byte for byte the same spec, and
a pod spec's defaults, its QoS class and whether it is valid depend on the spec alone. So each is worked out once
per distinct spec and looked up after that: a create of such a pod writes its spec as JSON (one C pass) where it
walked the spec three times in Python. A spec seen once costs the C pass and nothing else.

A spec is only remembered when its JSON stands for it exactly and is not large: one that orjson cannot write (an
integer over 64 bits), that holds a null (a NaN read from YAML is written as null too) or that is over
``MAX_KEY_BYTES`` is worked out every time.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import orjson

T = TypeVar("T")

#: specs remembered per question; a memo starts over when full (as the validation memos of names do)
MEMO_SIZE = 256
#: larger specs are not remembered (the memos stay well under a few MB)
MAX_KEY_BYTES = 16 * 1024


def spec_key(spec: Any) -> bytes | None:
    """The JSON of ``spec`` when it can stand for it, else None (see the module's docstring)."""
    if not isinstance(spec, dict):
        return None
    try:
        key = orjson.dumps(spec, option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS)
    except TypeError:  # orjson.JSONEncodeError: what JSON cannot hold exactly
        return None
    if len(key) > MAX_KEY_BYTES or b"null" in key:
        return None
    return key


class SpecMemo(Generic[T]):
    """A bounded map from a spec's key (and the question's own parameters) to the answer."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._size = size
        self._answers: dict[Any, T] = {}

    def get(self, key: Any) -> T | None:
        return self._answers.get(key)

    def put(self, key: Any, answer: T) -> None:
        if len(self._answers) >= self._size:
            self._answers.clear()
        self._answers[key] = answer

    def __len__(self) -> int:
        return len(self._answers)
