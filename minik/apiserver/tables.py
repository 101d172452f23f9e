"""Server-side printing: ``meta.k8s.io/v1`` Tables, the columns and cells ``kubectl get`` shows.

A client that lists ``application/json;as=Table;v=v1;g=meta.k8s.io`` first in its Accept header (negotiated by
minik.apiserver.negotiation) gets a Table instead of the object or list: one column definition per column
(``priority`` 1 marks the ``-o wide`` ones) and one row per object, with cells as Kubernetes' printers compute
them (minik/apiserver/printers.py) and the object itself as ``PartialObjectMetadata`` (``includeObject=Metadata``,
the default), whole (``Object``) or not at all (``None``). The server always fills every column, as Kubernetes does; kubectl hides the wide ones.
In a watch, every event's object is a one-row Table and only the first carries the column definitions.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from minik.api.errors import bad_request
from minik.api.registry import ResourceType
from minik.apiserver.printers import printer_of

Obj = dict[str, Any]

INCLUDE_METADATA, INCLUDE_OBJECT, INCLUDE_NONE = "Metadata", "Object", "None"


# -- options --------------------------------------------------------------------------------------------------
def include_object(query: Mapping[str, str]) -> str:
    value = query.get("includeObject") or INCLUDE_METADATA
    if value not in (INCLUDE_METADATA, INCLUDE_OBJECT, INCLUDE_NONE):
        raise bad_request(f'includeObject: Unsupported value: "{value}": supported values: "Metadata", "None", '
                          f'"Object"')
    return value


# -- Tables ---------------------------------------------------------------------------------------------------
class TableWriter:
    """Renders the objects of one resource as Tables of one version, with one includeObject policy."""

    def __init__(self, resource: ResourceType, api_version: str, include: str) -> None:
        self.resource = resource
        self.api_version = api_version
        self.include = include
        self.printer = printer_of(resource)

    def _row(self, obj: Obj, now: float) -> Obj:
        cells, conditions = self.printer.cells(obj, now)
        row: Obj = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        if self.include == INCLUDE_OBJECT:
            row["object"] = obj
        elif self.include == INCLUDE_METADATA:
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": self.api_version,
                             "metadata": obj.get("metadata") or {}}
        return row

    def _table(self, meta: Obj, rows: list[Obj], headers: bool = True) -> bytes:
        return orjson.dumps({"kind": "Table", "apiVersion": self.api_version, "metadata": meta,
                             "columnDefinitions": self.printer.columns() if headers else [], "rows": rows})

    def object(self, raw: bytes) -> bytes:
        """A single get: one row; the Table carries the object's resourceVersion."""
        obj = orjson.loads(raw)
        return self._table(_version_of(obj), [self._row(obj, time.time())])

    def list(self, items: list[bytes], meta: Obj) -> bytes:
        """A list page: the list's metadata (resourceVersion, continue, remainingItemCount), one row per item."""
        now = time.time()
        return self._table(dict(meta), [self._row(orjson.loads(raw), now) for raw in items])

    def event(self, line: bytes, headers: bool) -> tuple[bytes, bool]:
        """One watch event line with its object as a Table, and whether it carried a row. BOOKMARKs become empty
        Tables with the bookmark's resourceVersion; ERROR events (Status objects) pass unchanged."""
        event = orjson.loads(line)
        kind, obj = event.get("type"), event.get("object") or {}
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            table, row = self._table(_version_of(obj), [self._row(obj, time.time())], headers), True
        elif kind == "BOOKMARK":
            table, row = self._table(_version_of(obj), [], headers=False), False
        else:
            return line + b"\n", False
        return b'{"type":"' + kind.encode() + b'","object":' + table + b"}\n", row

    async def watch(self, lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The watch stream with Tables in its events; only the first row's Table carries the columns."""
        first = True
        try:
            async for chunk in lines:
                out = []
                for line in chunk.splitlines():
                    if line.strip():
                        converted, row = self.event(line, first)
                        first = first and not row
                        out.append(converted)
                if out:
                    yield b"".join(out)
        finally:
            aclose = getattr(lines, "aclose", None)
            if aclose is not None:
                await aclose()


def _version_of(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return {"resourceVersion": (meta.get("resourceVersion") if isinstance(meta, dict) else None) or ""}
