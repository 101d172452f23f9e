"""Keeping something derived from one key prefix current as the store commits, inside the server's process.

The API server's own views of the objects it serves (RBAC's index of bindings, the Node authorizer's graph of
which pods a node runs) follow the store the way an informer follows the API, but without the API in between:
a snapshot and a watch taken atomically, then each commit's events handed over synchronously while the commit
fans out, before its writers are acknowledged. A request that follows an acknowledged write therefore sees it:
there is no window in which a new RoleBinding exists but does not yet grant anything.

The events reach ``apply`` through the watcher's sink while the follower's task is parked (always, in practice);
anything the sink could not take is handed over by that task. A watcher that overflows is replaced by a new
snapshot, given to ``load`` again; one the store closes (a server shutting down ends every watch first) ends the
following, and the view keeps what it had for the requests still draining.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from minik.store.errors import StoreClosed
from minik.store.records import Event, Record
from minik.store.store import Store
from minik.store.watch import Watcher

log = structlog.get_logger("minik.store.follower")


class Follower:
    """Calls ``load(records)`` with everything under ``prefix`` now, then ``apply(events)`` with every commit's
    events under it, in revision order."""

    def __init__(self, store: Store, prefix: str, load: Callable[[list[Record]], None],
                 apply: Callable[[list[Event]], None]) -> None:
        self.store = store
        self.prefix = prefix
        self._load = load
        self._apply = apply
        self._watcher: Watcher | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Load the snapshot now (synchronously: the view is complete when this returns) and follow."""
        self._subscribe()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"follow {self.prefix}")

    def _subscribe(self) -> None:
        records, watcher = self.store.snapshot_and_watch(self.prefix)
        self._load(records)
        watcher.set_sink(self._sink)
        self._watcher = watcher

    def _sink(self, events: list[Event]) -> bool:
        self._apply(events)
        return True

    async def _run(self) -> None:
        while True:
            watcher = self._watcher
            assert watcher is not None
            try:
                batch = await watcher.next_batch(max_events=1024)
            except StopAsyncIteration:
                if not watcher.overflowed:
                    return  # the store ended its watches: it is shutting down
                try:
                    self._subscribe()
                except StoreClosed:
                    return
                log.warning("follower fell behind and took a new snapshot", prefix=self.prefix)
                continue
            if batch:
                self._apply(batch)

    async def stop(self) -> None:
        task, self._task = self._task, None
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            await watcher.aclose()
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
