"""A cluster's data directory seen from outside the process that runs it: is it running, as which PID, at which
URL since when.

The running `minik up` holds an exclusive lock on ``DATA_DIR/minik.lock`` (holding its PID) for its whole life,
so two processes never serve one store, and "running" means exactly "the lock is held" — a crashed process
releases it, whatever its PID became. Once ready it writes ``DATA_DIR/running.json`` (URL, start time, disabled
components, service range) and removes it when it stops. The data directory is 0700 and both files 0600
(``minik.pki.files``).

So that a cluster can see the others running on this machine (and choose a service range and a port of its
own), a running cluster also names its data directory in ``~/.minik/running/``: one file per data directory,
removed when it stops; an entry whose cluster is not running (it was killed) is ignored and removed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from minik.pki.files import private_dir, write_private


@dataclass(frozen=True)
class RunState:
    """What a running cluster publishes in its data directory."""

    pid: int
    url: str = ""
    name: str = ""
    started_at: str = ""
    kubeconfig: str = ""
    disabled: tuple[str, ...] = field(default_factory=tuple)
    service_cidr: str = ""
    """The cluster's service range ("" from a minik that did not record it: the default one)."""

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "url": self.url, "name": self.name, "startedAt": self.started_at,
                           "kubeconfig": self.kubeconfig, "disabled": list(self.disabled),
                           "serviceCIDR": self.service_cidr}, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> RunState:
        data: dict[str, Any] = json.loads(text)
        return cls(int(data["pid"]), str(data.get("url", "")), str(data.get("name", "")),
                   str(data.get("startedAt", "")), str(data.get("kubeconfig", "")),
                   tuple(str(d) for d in data.get("disabled") or ()), str(data.get("serviceCIDR", "")))

    @property
    def port(self) -> int | None:
        """The API server's port, from the URL (None while starting)."""
        tail = self.url.rsplit(":", 1)[-1].rstrip("/")
        return int(tail) if tail.isdigit() else None


class AlreadyRunning(Exception):
    def __init__(self, pid: int | None) -> None:
        super().__init__(f"already running (pid {pid})")
        self.pid = pid


class Instance:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._lock: IO[str] | None = None

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "minik.lock"

    @property
    def state_path(self) -> Path:
        return self.data_dir / "running.json"

    @property
    def kubeconfig_path(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def console_path(self) -> Path:
        """Where a cluster started with --detach writes what it would have printed."""
        return self.data_dir / "minik.out"

    # -- the lock (held by the process that serves the data directory) --------------------------------------
    def acquire(self) -> None:
        """Take the data directory for this process; AlreadyRunning if another process has it."""
        private_dir(self.data_dir)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)
        handle = os.fdopen(fd, "r+", encoding="utf-8")  # held until release()
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise AlreadyRunning(self.locked_pid()) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock = handle

    def release(self) -> None:
        self.state_path.unlink(missing_ok=True)
        _registry_entry(self.data_dir).unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.close()  # closing the file drops the lock
            self._lock = None

    def locked_pid(self) -> int | None:
        """The PID of the process holding the lock, or None when no process does."""
        try:
            handle = open(self.lock_path, encoding="utf-8")  # noqa: SIM115
        except FileNotFoundError:
            return None
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = handle.read().strip()
                return int(text) if text.isdigit() else -1
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None

    # -- the published state ---------------------------------------------------------------------------------
    def publish(self, url: str, name: str, disabled: tuple[str, ...], service_cidr: str = "") -> RunState:
        state = RunState(os.getpid(), url, name, datetime.now(UTC).isoformat(timespec="seconds"),
                         str(self.kubeconfig_path), disabled, service_cidr)
        write_private(self.state_path, state.to_json().encode())
        entry = _registry_entry(self.data_dir)
        private_dir(entry.parent)
        write_private(entry, f"{self.data_dir.resolve()}\n".encode())
        return state

    def running(self) -> RunState | None:
        """The state of the process serving this data directory, or None when none is. A process still starting
        has a PID but no URL yet."""
        pid = self.locked_pid()
        if pid is None:
            return None
        try:
            state = RunState.from_json(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError):
            return RunState(pid)
        return state if state.pid == pid else RunState(pid)


def registry_dir() -> Path:
    """Where running clusters name their data directories: ~/.minik/running."""
    return Path.home() / ".minik" / "running"


def _registry_entry(data_dir: Path) -> Path:
    return registry_dir() / hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]


def running_clusters() -> list[tuple[Path, RunState]]:
    """The clusters running on this machine that have published their state: those named in the registry and
    those in the default place (~/.minik/NAME, for a minik that kept no registry). A stale registry entry is
    removed."""
    found: dict[Path, RunState] = {}
    candidates: list[tuple[Path, Path | None]] = []
    if registry_dir().is_dir():
        for entry in registry_dir().iterdir():
            try:
                candidates.append((Path(entry.read_text(encoding="utf-8").strip()), entry))
            except OSError:
                continue
    home = Path.home() / ".minik"
    if home.is_dir():
        candidates.extend((path, None) for path in home.iterdir() if (path / "running.json").exists())
    for data_dir, registered in candidates:
        key = data_dir.resolve()
        if key in found:
            continue
        state = Instance(data_dir).running()
        if state is None:
            if registered is not None:
                registered.unlink(missing_ok=True)
            continue
        found[key] = state
    return sorted(found.items(), key=lambda item: str(item[0]))
