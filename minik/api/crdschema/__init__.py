"""Structural schemas of CustomResourceDefinitions, as Kubernetes' apiextensions server enforces them.

Pure: no I/O; imports minik.api (its CEL: minik.api.cel) and the standard library.

- ``check_structural(schema, path="spec.validation.openAPIV3Schema", status_subresource=False)``: the causes that
  make a CRD version's ``openAPIV3Schema`` refused, with Kubernetes' messages and field paths (not structural,
  forbidden fields, list-type rules, defaults that do not validate, CEL rules that do not compile, ``nullable`` at
  the root; with ``status_subresource``, the fields the root may have). Empty when the schema is fine. ``path`` is
  where the schema sits in the CRD (``spec.versions[0].schema.openAPIV3Schema``).
- ``CompiledSchema.from_openapi(schema)``: the schema compiled once per CRD version (every CEL program compiled,
  patterns compiled). Its methods work on a decoded custom resource in place:

  - ``prune(obj) -> list[str]``: removes unknown fields (keeping apiVersion, kind and metadata at the root and
    in embedded resources, and whatever x-kubernetes-preserve-unknown-fields keeps) and returns their paths,
    sorted, as Kubernetes reports them for fieldValidation (``spec.foo`` -> ``unknown field "spec.foo"``);
  - ``default(obj) -> None``: drops nulls of non-nullable fields that have no default, then applies defaults
    (on write after pruning, and on read from storage);
  - ``validate(obj, old=None) -> list[Cause]``: OpenAPI validation, embedded resources, list types and map keys,
    then the CEL rules of x-kubernetes-validations (transition rules only when ``old`` is given); an error at the
    root has the field ``<nil>``, as Kubernetes prints it. On an update (``old`` given) values equal to their
    correlated old values are ratcheted as in Kubernetes 1.32 (CRDValidationRatcheting): their schema errors and
    their failing rules that do not use oldSelf are let pass (Kubernetes warns about the latter; no warning here).

Metadata at the root is left to the API server (ObjectMeta validation), as Kubernetes does. CEL cost limits
(Kubernetes' estimated and runtime budgets) are not enforced.
"""

from minik.api.crdschema.compiled import CompiledSchema
from minik.api.crdschema.rules import cel_escape
from minik.api.crdschema.structural import check_structural

__all__ = ["CompiledSchema", "cel_escape", "check_structural"]
