"""The versioned object store: one SQLite file, one global revision, list and watch from any recent revision."""

from minik.store.errors import (
                                Compacted,
                                Conflict,
                                FutureRevision,
                                KeyExists,
                                KeyNotFound,
                                ObjectTooLarge,
                                StoreClosed,
                                StoreError,
)
from minik.store.records import Event, EventType, Record
from minik.store.settings import StoreSettings
from minik.store.store import ListResult, Store
from minik.store.watch import Trigger, Watcher

__all__ = [
    "Compacted", "Conflict", "Event", "EventType", "FutureRevision", "KeyExists", "KeyNotFound", "ListResult",
    "ObjectTooLarge",
    "Record", "Store", "StoreClosed", "StoreError", "StoreSettings", "Trigger", "Watcher",
]
