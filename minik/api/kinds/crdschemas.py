"""The structural-schema engine (``minik.api.crdschema``) as CustomResourceDefinitions use it.

A CRD's schema is checked when the CRD is written (``check_structural``) and compiled once per distinct schema
(``compile_schema``, remembered by the schema's JSON): every write of a custom resource prunes, defaults and
validates through the compiled form, and every read defaults through it.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from minik.api.crdschema import CompiledSchema, check_structural

__all__ = ["CompiledSchema", "check_structural", "compile_schema"]

Obj = dict[str, Any]


def compile_schema(schema: Obj | None) -> CompiledSchema | None:
    """The compiled form of ``schema``, made once per distinct schema; None without a schema."""
    if schema is None:
        return None
    return _compiled(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


@functools.lru_cache(maxsize=256)
def _compiled(encoded: bytes) -> CompiledSchema:
    return CompiledSchema.from_openapi(orjson.loads(encoded))
