"""Lists of the state at an older revision (the later pages of a paged list).

An object whose newest write is no newer than the revision is served from memory as it is; only the keys written
since (changed, created, deleted) are read from the backend, in batches, so a page costs about what it would at the
current revision.
"""

from __future__ import annotations

import heapq
import itertools

from minik.store.backend import Backend
from minik.store.current import CurrentState
from minik.store.keys import prefix_end
from minik.store.records import ListResult, Predicate, Record

#: the most keys one round of a list takes from memory (and, of those written since, reads from the backend)
BATCH_KEYS = 1024


async def list_at(current: CurrentState, backend: Backend, prefix: str, revision: int, after: str | None,
                  limit: int, predicate: Predicate | None) -> ListResult:
    """The records under ``prefix`` after key ``after`` as they were at ``revision``: at most ``limit`` (> 0) of
    them, those ``predicate`` keeps. The caller keeps compaction from passing ``revision`` meanwhile."""
    end = prefix_end(prefix)
    state = current.records
    items: list[Record] = []
    last = after  # every key up to this one has been seen
    while True:
        # one more than a full page tells whether more remain; the keys are taken afresh after each read of the
        # backend, since writes may change the state meanwhile
        want = min((limit - len(items) + 1) if limit else BATCH_KEYS, BATCH_KEYS)
        low = last if last is not None else prefix
        in_state = itertools.islice(state.irange(minimum=low, maximum=end, inclusive=(last is None, False)), want)
        gone = heapq.nsmallest(want, (key for key, rev in current.tombstones.items()
                                      if rev > revision and low <= key < end and key != last and key not in state))
        batch = [key for key, _ in itertools.groupby(heapq.merge(in_state, gone))][:want]
        if not batch:
            return ListResult(items, revision, False, None)
        last = batch[-1]
        for record in await records_at(current, backend, batch, revision):
            if limit and len(items) >= limit:
                return ListResult(items, revision, True, None)
            if predicate is None or predicate(record):
                items.append(record)


async def records_at(current: CurrentState, backend: Backend, keys: list[str], revision: int) -> list[Record]:
    """The records of ``keys`` (in key order) as they were at ``revision``, leaving out those absent then."""
    state = current.records
    found: dict[str, Record | None] = {}
    older: list[str] = []
    for key in keys:
        record = state.get(key)
        if record is not None and record.mod_revision <= revision:
            found[key] = record
        else:
            older.append(key)
    if older:
        for record in await backend.records_at(older, revision):
            found[record.key] = record
    return [record for key in keys if (record := found.get(key)) is not None]
