"""Warnings for the client (the ``Warning: 299 - "..."`` response header), collected while a request runs.

As Kubernetes' ``warning.AddWarning(ctx, ...)``: any stage of the pipeline (an admission plugin, for instance)
adds a warning without being handed the response; ``ApiServer.handle`` opens a collection per request and puts
what was added into the response's ``Warning`` header.
"""

from __future__ import annotations

from contextvars import ContextVar, Token

from minik.apiserver.fieldvalidation import warning_value

_collected: ContextVar[list[str] | None] = ContextVar("minik_warnings", default=None)


def add_warning(text: str) -> None:
    """Warn the client of the current request (no-op outside a request)."""
    collected = _collected.get()
    if collected is not None and text not in collected:
        collected.append(text)


def collect() -> Token[list[str] | None]:
    return _collected.set([])


def finish(token: Token[list[str] | None], headers: dict[str, str]) -> None:
    """Add the collected warnings to ``headers`` (after any already there) and close the collection."""
    collected = _collected.get() or []
    _collected.reset(token)
    if collected:
        values = ", ".join(warning_value(text) for text in collected)
        headers["Warning"] = f'{headers["Warning"]}, {values}' if headers.get("Warning") else values
