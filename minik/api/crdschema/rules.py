"""``x-kubernetes-validations`` entries compiled for a schema node, the causes a failing rule gives, and the names
properties have in CEL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from minik.api.cel import CompileError
from minik.api.crdschema import celrules
from minik.api.crdschema.gofmt import child, duplicate, forbidden, invalid, key, required
from minik.api.errors import Cause


# -- CEL rules --------------------------------------------------------------------------------------------
@dataclass
class Rule:
    """One ``x-kubernetes-validations`` entry, compiled."""

    source: str
    message: str
    reason: str | None
    field_path: str
    optional_old_self: bool
    uses_old_self: bool = False
    program: Any = None
    message_program: Any = None
    error: str | None = None
    message_error: str | None = None

    @property
    def error_string(self) -> str:
        return self.message.strip() if self.message else self.source.strip()


_FIELD_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\['((?:\\.|[^'\\])*)'\]")


def normalize_field_path(text: str) -> str | None:
    """``.spec.ports['a.b']`` as a ``field.Path`` suffix (``spec.ports[a.b]``), None when it is no such path."""
    pos, out = 0, ""
    text = text.strip()
    while pos < len(text):
        m = _FIELD_PATH_TOKEN.match(text, pos)
        if not m:
            return None
        if m.group(1) is not None:
            out = child(out, m.group(1))
        else:
            out = key(out, re.sub(r"\\(.)", r"\1", m.group(2)))
        pos = m.end()
    return out or None


def compile_rules(raw: Any, self_type: Any) -> list[Rule]:
    rules: list[Rule] = []
    if not isinstance(raw, list):
        return rules
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        source = str(entry.get("rule") or "")
        rule = Rule(source=source, message=str(entry.get("message") or ""),
                    reason=entry.get("reason") if isinstance(entry.get("reason"), str) else None,
                    field_path=normalize_field_path(str(entry.get("fieldPath") or "")) or "",
                    optional_old_self=entry.get("optionalOldSelf") is True)
        rules.append(rule)
        if not source.strip():
            continue
        rule.uses_old_self = celrules.uses_old_self(source)
        try:
            rule.program = celrules.compile_rule(source, self_type, rule.optional_old_self and rule.uses_old_self)
        except CompileError as exc:
            rule.error = str(exc)
        expression = entry.get("messageExpression")
        if isinstance(expression, str) and expression.strip():
            try:
                rule.message_program = celrules.compile_message_expression(expression, self_type)
            except CompileError as exc:
                rule.message_error = str(exc)
    return rules


def rule_error(path: str, shown_type: str, detail: str, reason: str | None) -> Cause:
    if reason == "FieldValueForbidden":
        return forbidden(path, detail)
    if reason == "FieldValueRequired":
        return required(path, detail)
    if reason == "FieldValueDuplicate":
        return duplicate(path, shown_type)
    return invalid(path, shown_type, detail)


_ESCAPABLE = re.compile(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*")
_RESERVED = frozenset(("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                       "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"))


def cel_escape(name: str) -> str | None:
    """The name a property has in CEL (Kubernetes' escaping); None when CEL cannot name it."""
    if name in _RESERVED:
        return f"__{name}__"
    if not _ESCAPABLE.fullmatch(name):
        return None
    return (name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__")
            .replace("/", "__slash__"))


