"""Label and field selectors, parsed and matched as k8s.io/apimachinery/pkg/labels and pkg/fields do.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``, ``a>1``, ``a<1``,
comma-separated (AND), whitespace tolerant; or a metav1.LabelSelector dict (``selector_from_dict``).
Field selectors: ``f=v``, ``f==v``, ``f!=v``, comma-separated, values escaped with backslashes (``\\,`` ``\\=``
``\\\\``). Parse errors raise ValueError; the empty string selects everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minik.api.params import go_int
from minik.api.validation import is_qualified_name, is_valid_label_value

# -- label selectors --------------------------------------------------------------------------------------------

#: operators as Kubernetes spells them in selection.Operator
IN, NOT_IN, EQUALS, NOT_EQUALS, EXISTS, DOES_NOT_EXIST, GT, LT = "in", "notin", "=", "!=", "exists", "!", "gt", "lt"


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        if self.operator in (IN, EQUALS):
            return has and labels[self.key] in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not has or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return has
        if self.operator == DOES_NOT_EXIST:
            return not has
        if not has:
            return False
        actual, wanted = go_int(labels[self.key]), go_int(self.values[0])
        if actual is None or wanted is None:
            return False
        return actual > wanted if self.operator == GT else actual < wanted

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        symbol = {GT: ">", LT: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{self.values[0]}"


def _requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """Kubernetes' NewRequirement: validates the key, the number of values and each value."""
    errors = [f'key: Invalid value: "{key}": {"; ".join(msgs)}'] if (msgs := is_qualified_name(key)) else []
    if operator in (IN, NOT_IN) and not values:
        errors.append("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
    if operator in (EQUALS, NOT_EQUALS) and len(values) != 1:
        errors.append("values: Invalid value: exact-match compatibility requires one single value")
    if operator in (GT, LT):
        if len(values) != 1:
            errors.append("values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required")
        for i, value in enumerate(values):
            if go_int(value) is None:
                errors.append(f'values[{i}]: Invalid value: "{value}": for \'Gt\', \'Lt\' operators, the value '
                              f'must be an integer')
    for i, value in enumerate(values):
        if msgs := is_valid_label_value(value):
            errors.append(f'values[{i}][{key}]: Invalid value: "{value}": {"; ".join(msgs)}')
    if errors:
        raise ValueError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
    if operator in (IN, NOT_IN):
        values = sorted(set(values))
    return Requirement(key, operator, tuple(values))


class LabelSelector:
    """All requirements must hold (AND). ``LabelSelector([])`` selects everything; ``LabelSelector.nothing()``
    selects nothing (a nil metav1.LabelSelector)."""

    def __init__(self, requirements: list[Requirement], *, nothing: bool = False) -> None:
        self.requirements = tuple(sorted(requirements, key=lambda r: r.key))
        self._nothing = nothing

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls([], nothing=True)

    @property
    def empty(self) -> bool:
        """True when the selector selects everything (no requirement)."""
        return not self.requirements and not self._nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})" if not self._nothing else "LabelSelector.nothing()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelSelector) and (self.requirements, self._nothing) == \
            (other.requirements, other._nothing)

    def __hash__(self) -> int:
        return hash((self.requirements, self._nothing))


_SPECIAL = set("=!(),<>")


def _tokens(text: str) -> list[str]:
    """Split into identifiers and the operators/punctuation of the selector grammar."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c in _SPECIAL:
            two = text[i:i + 2]
            if two in ("==", "!="):
                out.append(two)
                i += 2
            else:
                out.append(c)
                i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _is_identifier(token: str | None) -> bool:
    return token is not None and token[0] not in _SPECIAL


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.pos += 1
        return token

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        if self.peek() is None:
            return requirements
        while True:
            token = self.peek()
            if not (_is_identifier(token) or token == "!"):
                raise ValueError(f"found '{token or ''}', expected: !, identifier, or 'end of string'")
            requirements.append(self.requirement())
            token = self.take()
            if token is None:
                return requirements
            if token != ",":
                raise ValueError(f"found '{token}', expected: ',' or 'end of string'")
            following = self.peek()
            if not (_is_identifier(following) or following == "!"):
                raise ValueError(f"found '{following or ''}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.take()
        if not _is_identifier(key):
            raise ValueError(f"found '{key or ''}', expected: identifier")
        assert key is not None
        if self.peek() in (None, ","):
            return _requirement(key, DOES_NOT_EXIST if negated else EXISTS, [])
        if negated:
            raise ValueError(f"found '{self.peek()}', expected: ',' or 'end of string'")
        operator = self.take()
        if operator in ("=", "=="):
            return _requirement(key, EQUALS, self.exact_value())
        if operator == "!=":
            return _requirement(key, NOT_EQUALS, self.exact_value())
        if operator in (">", "<"):
            return _requirement(key, GT if operator == ">" else LT, self.exact_value())
        if operator in (IN, NOT_IN):
            return _requirement(key, operator, self.value_list())
        raise ValueError(f"found '{operator}', expected: in, notin, =, ==, !=, gt, lt")

    def exact_value(self) -> list[str]:
        token = self.peek()
        if token in (None, ","):
            return [""]
        self.take()
        if _is_identifier(token):
            assert token is not None
            return [token]
        raise ValueError(f"found '{token}', expected: identifier")

    def value_list(self) -> list[str]:
        token = self.take()
        if token != "(":
            raise ValueError(f"found '{token or ''}' expected: '('")
        values: list[str] = []
        expect_value = True
        while True:
            token = self.take()
            if token == ")":
                if expect_value and values:
                    values.append("")  # a trailing ',' stands for the empty value, as in Kubernetes
                return values if values or not expect_value else [""]
            if token == ",":
                if expect_value:
                    values.append("")
                expect_value = True
            elif _is_identifier(token) and expect_value:
                assert token is not None
                values.append(token)
                expect_value = False
            else:
                raise ValueError(f"found '{token or ''}', expected: ',', ')' or identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the string form of a label selector; ValueError explains what was expected where."""
    return LabelSelector(_LabelParser(text or "").parse())


_EXPRESSION_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector as a selector (Kubernetes' LabelSelectorAsSelector): None selects nothing, an
    empty one everything."""
    if selector is None:
        return LabelSelector.nothing()
    if not isinstance(selector, Mapping):
        raise ValueError("a label selector must be an object")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list) or \
            not all(isinstance(e, Mapping) for e in expressions):
        raise ValueError("matchLabels must be an object and matchExpressions a list of objects")
    requirements = [_requirement(str(k), EQUALS, [str(v)]) for k, v in match_labels.items()]
    for expr in expressions:
        operator = _EXPRESSION_OPERATORS.get(expr.get("operator"))
        if operator is None:
            raise ValueError(f'"{expr.get("operator")}" is not a valid label selector operator')
        requirements.append(_requirement(str(expr.get("key", "")), operator,
                                         [str(v) for v in expr.get("values") or []]))
    return LabelSelector(requirements)


def selector_from_set(labels: Mapping[str, str]) -> LabelSelector:
    """Every label must be present with this value (a Service's or ReplicationController's selector)."""
    return LabelSelector([Requirement(k, EQUALS, (v,)) for k, v in labels.items()])


# -- field selectors ----------------------------------------------------------------------------------------------


class FieldSelector:
    """Terms ``(field, op, value)`` with op "=" or "!="; all must hold. A missing field reads as ""."""

    def __init__(self, requirements: list[tuple[str, str, str]]) -> None:
        self.requirements = tuple(sorted(requirements))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        for name, op, value in self.requirements:
            if (fields.get(name, "") == value) != (op == "="):
                return False
        return True

    def exact(self, name: str) -> str | None:
        """The value the selector requires ``name`` to equal, if any (``spec.nodeName=n1`` -> "n1")."""
        for field, op, value in self.requirements:
            if field == name and op == "=":
                return value
        return None

    def __str__(self) -> str:
        return ",".join(f"{f}{op}{escape_field_value(v)}" for f, op, v in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"


def escape_field_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {c}")
        else:
            out.append(c)
    if escaped:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms, start, escaped = [], 0, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def parse_field_selector(text: str) -> FieldSelector:
    """Parse ``f=v,g!=w``; ValueError for a term without an operator or a badly escaped value."""
    requirements = []
    for term in _split_terms(text or ""):
        if not term:
            continue
        for i in range(len(term)):
            op = next((o for o in ("!=", "==", "=") if term.startswith(o, i)), None)
            if op is not None:
                requirements.append((term[:i], "!=" if op == "!=" else "=",
                                     _unescape_field_value(term[i + len(op):])))
                break
        else:
            raise ValueError(f"invalid selector: '{text}'; can't understand '{term}'")
    return FieldSelector(requirements)
