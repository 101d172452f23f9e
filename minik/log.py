"""structlog set-up: JSON lines for machines, with the component and the object bound by each caller."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TextIO

import structlog

from minik.logtap import NamedLoggerFactory, Tap, add_logger_name
from minik.pki.files import open_private


def configure(level: str = "info", path: Path | None = None, stream: TextIO | None = None) -> None:
    """Send logs as JSON lines to ``path`` (appending; the file is 0600) or ``stream`` (default stderr), each with
    the name of its logger; each component's lines are also kept for its mirror pod's log (``minik.logtap``)."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    if path is not None:
        out: TextIO = os.fdopen(open_private(path), "a", buffering=1, encoding="utf-8")  # lives with the process
    else:
        out = stream or sys.stderr
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_logger_name,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            Tap(structlog.processors.JSONRenderer()),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=NamedLoggerFactory(structlog.WriteLoggerFactory(file=out)),
        cache_logger_on_first_use=False,
    )
