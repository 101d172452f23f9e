"""Writing secrets to disk: atomically, readable by the owner only, in a directory only the owner can enter."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def private_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) and make it mode 0700."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600: a temporary file created 0600 and renamed over the target, so no
    reader ever sees a partial file or a moment of wider permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def restrict(path: Path) -> None:
    """Make an existing file mode 0600 (nothing happens when it does not exist)."""
    try:
        os.chmod(path, 0o600)
    except FileNotFoundError:
        pass
