"""The structural-schema engine (``minik.api.crdschema``) as CustomResourceDefinitions use it.

A CRD's schema is checked when the CRD is written (``check_structural``) and compiled once per distinct schema
(``compile_schema``, remembered by the schema's JSON): every write of a custom resource prunes, defaults and
validates through the compiled form, and every read defaults through it. Without the engine (a minik built
without it) schemas are accepted as they are and custom resources are kept whole.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any, Protocol

import orjson

from minik.api.errors import Cause

Obj = dict[str, Any]


class CompiledSchema(Protocol):
    """What a compiled schema does to an object of its kind (minik.api.crdschema.CompiledSchema)."""

    def prune(self, obj: Any) -> list[str]:
        """Remove (in place) the fields the schema does not know; their paths."""
        ...

    def default(self, obj: Any) -> None:
        """Fill in the schema's defaults, in place."""
        ...

    def validate(self, obj: Any, old: Any) -> list[Cause]:
        """Every violation of the schema and of its CEL rules (``old``: the object before an update, or None)."""
        ...


@functools.cache
def _engine() -> ModuleType | None:
    try:
        return importlib.import_module("minik.api.crdschema")
    except ImportError:
        return None


def available() -> bool:
    return _engine() is not None


def check_structural(schema: Any, path: str) -> list[Cause]:
    """Why ``schema`` (an openAPIV3Schema, at ``path``) is not a structural schema the API server can serve."""
    engine = _engine()
    if engine is None:
        return []
    causes: list[Cause] = engine.check_structural(schema, path)
    return causes


def compile_schema(schema: Obj | None) -> CompiledSchema | None:
    """The compiled form of ``schema``, made once per distinct schema; None without a schema or an engine."""
    if schema is None or _engine() is None:
        return None
    return _compiled(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


@functools.lru_cache(maxsize=256)
def _compiled(encoded: bytes) -> CompiledSchema:
    engine = _engine()
    assert engine is not None
    compiled: CompiledSchema = engine.CompiledSchema.from_openapi(orjson.loads(encoded))
    return compiled
