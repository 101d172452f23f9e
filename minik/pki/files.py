"""Writing secrets to disk: atomically, readable by the owner only, in a directory only the owner can enter.

A data directory (`minik up`'s, `minik node join`'s) is private as a whole: the directory is 0700 and every file
minik writes in it is 0600, whatever the umask: its logs, console output, lock and running.json too, though
they hold no secret, so that nothing secret can land in a readable file by mistake. Modes are set explicitly
rather than through the process's umask, which pods' volumes and processes inherit (an emptyDir is 0777, a
Secret volume's files have their defaultMode, as in Kubernetes).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def private_dir(path: Path) -> Path:
    """Create ``path`` (and its parents) and make it mode 0700."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


#: the parts of a data directory whose every file is tightened at start: the cluster's and a joined node's
#: credentials. Elsewhere only the data directory's own entries are (the kubelet's directory holds pods'
#: volumes, whose modes are the pods')
_PRIVATE_TREES = ("pki", "credentials")


def private_data_dir(path: Path) -> list[Path]:
    """Make the data directory ``path`` 0700 (creating it) and tighten what an older minik left readable to
    others: its files to 0600 and its subdirectories to 0700, every file under pki/ and credentials/ too.
    Returns the files that were readable by others (their contents may have been read)."""
    private_dir(path)
    exposed = []
    entries = list(path.iterdir())
    for tree in _PRIVATE_TREES:
        if (path / tree).is_dir():
            entries += list((path / tree).rglob("*"))
    for entry in entries:
        try:
            info = entry.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            if stat.S_IMODE(info.st_mode) & 0o077:
                os.chmod(entry, 0o700)
        elif stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
            if stat.S_IMODE(info.st_mode) & 0o044:
                exposed.append(entry)
            os.chmod(entry, 0o600)
    return exposed


def open_private(path: Path) -> int:
    """A descriptor to append to ``path``, created 0600 (an existing file is made 0600): for logs and console
    output that live as long as a process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return fd


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
