"""Answers about pod specs, remembered by the spec's JSON.

Pods stamped from one template (a ReplicaSet's, a Job's, a benchmark's) carry byte for byte the same spec, and
a pod spec's defaults, its QoS class and whether it is valid depend on the spec alone. So each is worked out once
per distinct spec and looked up after that: a create of such a pod writes its spec as JSON (one C pass) where it
walked the spec three times in Python. A spec seen once costs the C pass and nothing else.

A spec is only remembered when its JSON stands for it exactly and is not large: one that orjson cannot write (an
integer over 64 bits), that holds a null (a NaN read from YAML is written as null too) or that is over
``MAX_KEY_BYTES`` is worked out every time. Remembered keys hold no null, so such a spec never finds an answer
either: the check is made once, when an answer is remembered, not on every look-up.

Where specs do not repeat (every pod written by hand), a memo only costs: after ``MISSES_BEFORE_REST`` look-ups
in a row that found nothing it rests, answering "no key" without writing the spec, for ``REST_CALLS`` calls, and
then looks again.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import orjson

from minik.jsonbytes import kept

T = TypeVar("T")

#: specs remembered per question; a memo starts over when full (as the validation memos of names do)
MEMO_SIZE = 256
#: larger specs are not remembered (the memos stay well under a few MB)
MAX_KEY_BYTES = 16 * 1024

#: look-ups in a row that found nothing before a memo rests, and for how many calls it does
MISSES_BEFORE_REST = 64
REST_CALLS = 1024

_EXACT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS  # refuse what JSON cannot hold
_dumps = orjson.dumps


def spec_key(spec: Any) -> bytes | None:
    """The JSON of ``spec``, or None when it has none (not an object, or what JSON cannot hold). Every pod create
    asks this four times, so it is kept to the bare steps."""
    if type(spec) is not dict:  # noqa: E721 - decoded JSON objects are plain dicts
        return None
    try:
        return _dumps(spec, option=_EXACT)
    except TypeError:  # orjson.JSONEncodeError
        return None


class SpecMemo(Generic[T]):
    """A bounded map from a spec's key to the answer for it, that rests while specs do not repeat."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._size = size
        self._answers: dict[bytes, T] = {}
        self._misses = 0  # look-ups in a row that found nothing
        self._resting = 0  # calls left before the memo looks again

    def key(self, spec: Any) -> bytes | None:
        """``spec_key(spec)``, or None while the memo rests (then the caller works the answer out)."""
        if self._resting:
            self._resting -= 1
            return None
        return spec_key(spec)

    def get(self, key: bytes) -> T | None:
        answer = self._answers.get(key)
        if answer is not None:
            self._misses = 0
        else:
            self._misses += 1
            if self._misses >= MISSES_BEFORE_REST:
                self._misses, self._resting = 0, REST_CALLS
        return answer

    def put(self, key: bytes, answer: T) -> None:
        """Remember ``answer`` unless the key cannot stand for its spec (see the module's docstring)."""
        if len(key) > MAX_KEY_BYTES or b"null" in key:
            return
        if len(self._answers) >= self._size:
            self._answers.clear()
        if isinstance(answer, bytes):
            answer = kept(answer)  # type: ignore[assignment] # the same type: bytes
        self._answers[kept(key)] = answer

    def __len__(self) -> int:
        return len(self._answers)
