"""The store's current state: every key's newest record, in a dict for reads and writes, with the keys in order
for range reads (lists, counts, pages).

The order is kept lazily. Most writes to a cluster create a key (a pod, an event) and most reads are gets and
watches; keeping a sorted index exact on every insert cost about 5% of a pod create (a SortedDict), though no
list may come for seconds. New keys wait in a set, and the next range read sorts them in, all at once.
"""

from __future__ import annotations

from collections.abc import Iterator

from sortedcontainers import SortedList

from minik.store.records import Record

_MISSING = object()


class State:
    __slots__ = ("_records", "_ordered", "_unordered")

    def __init__(self) -> None:
        self._records: dict[str, Record] = {}
        self._ordered = SortedList()
        #: keys added since the last range read, not yet in ``_ordered``
        self._unordered: set[str] = set()

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __getitem__(self, key: str) -> Record:
        return self._records[key]

    def get(self, key: str) -> Record | None:
        return self._records.get(key)

    def __setitem__(self, key: str, record: Record) -> None:
        if key not in self._records:
            self._unordered.add(key)
        self._records[key] = record

    def pop(self, key: str) -> Record | None:
        record = self._records.pop(key, _MISSING)
        if record is _MISSING:
            return None
        if key in self._unordered:
            self._unordered.discard(key)
        else:
            self._ordered.remove(key)
        return record  # type: ignore[return-value]

    def _keys(self) -> SortedList:
        if self._unordered:
            self._ordered.update(self._unordered)
            self._unordered.clear()
        return self._ordered

    def irange(self, minimum: str, maximum: str, inclusive: tuple[bool, bool] = (True, True)) -> Iterator[str]:
        """The keys from ``minimum`` to ``maximum``, in order. Take them before the state changes again."""
        return self._keys().irange(minimum, maximum, inclusive)

    def bisect_left(self, key: str) -> int:
        return self._keys().bisect_left(key)

    def bisect_right(self, key: str) -> int:
        return self._keys().bisect_right(key)
