"""Environments, compilation and evaluation: the three steps every CEL expression in minik goes through.

An environment has CEL's extensions and Kubernetes' libraries (library.extensions()) and the variables its
caller declares. Compiling type-checks; a failure is a CompileError whose text is cel-go's ``issues.String()``
(``ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(string, int)'``, the source line, a
caret), which is what Kubernetes puts after ``compilation failed: ``. Evaluating gives an Outcome: the value, or
the runtime's error in cel-go's words (``no such key: x``), never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel

from minik.api.cel import library

T = cel.Type


def new_env(variables: Mapping[str, Any], extensions: Sequence[Any] = (), pool: Any = None) -> Any:
    """An environment declaring ``variables`` (name -> cel.Type), with every library and ``extensions``;
    ``pool`` is a protobuf descriptor pool holding the message types the declarations name (see types)."""
    return cel.NewEnv(descriptor_pool=pool, variables=dict(variables),
                      extensions=[*library.extensions(), *extensions])


class CompileError(Exception):
    """An expression that does not compile; ``str`` is the checker's issues as cel-go words them."""


#: the checker's messages where cel-go words them otherwise
_ISSUE_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"undefined field '([^']*)' not found in struct '[^']*'"), r"undefined field '\1'"),
    (re.compile(r"expression of type '([^']*)' cannot be the operand of a select operation"),
     r"type '\1' does not support field selection"),
)
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_ERROR_HEAD = re.compile(r"ERROR: <input>:(\d+):(\d+): (.*)")


_UNDECLARED = re.compile(r"undeclared reference to '([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)'")


def _cel_go_issue(message: str, line: str, col: int) -> tuple[str, int]:
    """One issue's message and column as cel-go reports it. An undeclared ``a.b.c`` is reported by this checker
    whole, at its last dot; cel-go reports ``a``, where it begins."""
    for pattern, words in _ISSUE_WORDS:
        message = pattern.sub(words, message)
    m = _UNDECLARED.search(message)
    if m:
        segments = m.group(1).split(".")
        head = re.search(r"\s*\.\s*".join(map(re.escape, segments[:-1])) + r"\s*$", line[:col - 1])
        if head is not None and (head.start() == 0 or not re.match(r"[\w.]", line[head.start() - 1])):
            message = message[:m.start(1)] + segments[0] + message[m.end(1):]
            col = head.start() + 1
    return message, col


def compile_message(raw: str, source: str, line_offset: int = 0) -> str:
    """The checker's issues as cel-go's ``issues.String()``: ``ERROR: <input>:L:C: message`` and the source line
    with a caret, one issue after another. ``line_offset`` undoes lines a wrapper added before the source."""
    body = _STATUS_PREFIX.sub("", raw.strip())
    body = re.sub(r"\s*\[[A-Z_]+\]$", "", body)
    lines = source.split("\n")
    issues: list[str] = []
    for text in body.split("\n"):
        m = _ERROR_HEAD.match(text.strip())
        if not m:
            continue
        line, col = int(m.group(1)) - line_offset, int(m.group(2))
        if line < 1 or line > len(lines):
            line, col = 1, 1
        message, col = _cel_go_issue(m.group(3), lines[line - 1], col)
        issues.append(f"ERROR: <input>:{line}:{col}: {message}\n | {lines[line - 1]}\n | {'.' * (col - 1)}^")
    return "\n".join(issues) if issues else body


def compile_program(env: Any, source: str, text: str | None = None, line_offset: int = 0) -> Any:
    """The checked program of ``source`` (or of ``text``, a wrapper of it whose first ``line_offset`` lines come
    before the source); CompileError in cel-go's words when it does not compile."""
    try:
        return env.compile(source if text is None else text)
    except RuntimeError as exc:
        raise CompileError(compile_message(str(exc), source, line_offset)) from None


def output_type(program: Any) -> str:
    """The type the checker gives a program's value, as this runtime names it (``BOOL``, ``LIST<STRING>``, ``DYN``)."""
    return str(program.return_type().name())


# -- evaluation ----------------------------------------------------------------------------------------------
#: messages of the runtime's errors, in cel-go's words (which Kubernetes' messages carry)
_RUNTIME_ERRORS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r'Key not found in map ?: ?"?(.*?)"?$'), lambda m: f"no such key: {m.group(1)}"),
    (re.compile(r"Index error: index=(-?\d+)"), lambda m: f"index out of bounds: {m.group(1)}"),
    (re.compile(r"divide by zero|division by zero"), lambda m: "division by zero"),
    (re.compile(r"modulus by zero|modulo by zero"), lambda m: "modulus by zero"),
    (re.compile(r"[Nn]o matching overloads? (?:found)?\s*:?\s*(.*)"), lambda m: f"no such overload: {m.group(1)}".strip()),
    (re.compile(r"No such field|no_such_field", re.I), lambda m: "no such key"),
)


def runtime_message(raw: str) -> str:
    """A runtime error of the C++ runtime as cel-go words it."""
    text = _STATUS_PREFIX.sub("", raw.strip())
    for pattern, render in _RUNTIME_ERRORS:
        m = pattern.search(text)
        if m:
            return render(m)
    return text


@dataclass
class Outcome:
    """What a program gave: a value, or the runtime's error message (in cel-go's words)."""

    value: Any = None
    error: str | None = None


_ERROR = T.ERROR


def run(program: Any, data: Mapping[str, Any] | None = None, activation: Any = None) -> Outcome:
    """Evaluate over ``data`` (each variable's value: JSON as it is, or converted by values), or over an
    ``activation`` of the program's environment (made once for several programs, it converts a value only when
    one reads it); any failure, including a value the runtime cannot take, comes back as an error."""
    try:
        result = program.eval(data=data) if activation is None else program.eval(activation)
        value = result.value()
        if value is True or value is False:
            return Outcome(value)
        if result.type() == _ERROR:
            return Outcome(error=runtime_message(str(value)))
        if type(value) is list or type(value) is dict:
            return Outcome(result.plain_value())  # value() leaves the items as CEL values
        return Outcome(value)
    except Exception as exc:  # noqa: BLE001 - the runtime's conversion errors become the expression's error, never a 500
        return Outcome(error=runtime_message(str(exc)))
