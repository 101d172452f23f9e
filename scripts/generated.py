"""What the generator scripts share: write a generated file, or with --check say whether it is up to date."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(out: Path, text: str, check: bool, script: str) -> int:
    """Write ``text`` to ``out`` (exit status 0); with ``check``, write nothing and return 1 when ``out`` differs,
    naming ``script`` as the way to bring it up to date."""
    if check:
        current = out.read_text() if out.exists() else ""
        if current != text:
            print(f"{out} is out of date: run {script}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out} ({len(text) // 1024} KiB)")
    return 0
