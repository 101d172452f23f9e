"""Store errors. The API server maps each to a Kubernetes Status (AlreadyExists, NotFound, Conflict, Expired)."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every store error."""


class KeyExists(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}")
        self.key = key


class KeyNotFound(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class Conflict(StoreError):
    """A compare-and-swap lost: the key's revision is not the one the caller expected."""

    def __init__(self, key: str, expected: int, actual: int) -> None:
        super().__init__(f"conflict on {key}: expected revision {expected}, found {actual}")
        self.key = key
        self.expected = expected
        self.actual = actual


class Compacted(StoreError):
    """The revision asked for is older than the compacted history (HTTP 410 Expired)."""

    def __init__(self, requested: int, compact_revision: int) -> None:
        super().__init__(f"revision {requested} has been compacted (oldest available: {compact_revision})")
        self.requested = requested
        self.compact_revision = compact_revision


class FutureRevision(StoreError):
    """The revision asked for is newer than the store has reached (HTTP 504 Too large resource version)."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"Too large resource version: {requested}, current: {current}")
        self.requested = requested
        self.current = current


class StoreClosed(StoreError):
    """The store is shutting down and takes no more writes."""


class ObjectTooLarge(StoreError):
    """A serialized object over the store's size limit (etcd refuses values over 1.5 MiB; so does minik)."""

    def __init__(self, key: str, size: int, limit: int) -> None:
        super().__init__(f"the object at {key} is {size} bytes, over the store's limit of {limit} bytes")
        self.key = key
        self.size = size
        self.limit = limit
