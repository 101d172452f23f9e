"""A cluster's service range and API port, chosen so that two clusters on one machine do not collide.

Each cluster's proxy redirects its cluster IPs with NAT rules of its own on this machine: two clusters with one
service range would each catch the other's traffic (the `kubernetes` Service is 10.96.0.1 in both). So a new
cluster whose range is not given takes the default range when no running cluster has it, else the next free /12
after it (10.112.0.0/12, 10.128.0.0/12, ...). Likewise the API port: 6443 unless another running cluster listens
there, else the next port free. Both are recorded in DATA_DIR/network.json, so that the cluster keeps them when it
restarts (its Services hold their cluster IPs; kubeconfigs hold its URL).

Pod addresses need no choice: on Docker every pod's sandbox is on Docker's default bridge, whose addresses the
engine hands out, one per container whichever cluster asks; with the process runtime pods share the node's.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass
from pathlib import Path

from minik.cli.instance import RunState, running_clusters
from minik.pki.files import write_private

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_PORT = 6443

#: the service ranges a new cluster may take, in order: the default, then the /12s above it
CANDIDATE_RANGES = tuple(f"10.{second}.0.0/12" for second in range(96, 256, 16))

#: how many ports after the default one are tried
PORT_TRIES = 100


@dataclass(frozen=True)
class Choice:
    """A chosen value, and a line for the person when it is not the one they would expect."""

    value: str | int
    note: str | None = None


def _record_path(data_dir: Path) -> Path:
    return data_dir / "network.json"


def recorded(data_dir: Path) -> dict[str, object]:
    """What the cluster of ``data_dir`` recorded (serviceCIDR, port); {} when nothing was."""
    try:
        data = json.loads(_record_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(data_dir: Path, service_cidr: str, port: int | None) -> None:
    data: dict[str, object] = {"serviceCIDR": service_cidr}
    if port:
        data["port"] = port
    if recorded(data_dir) != data:
        write_private(_record_path(data_dir), (json.dumps(data, indent=2) + "\n").encode())


def _others(data_dir: Path) -> list[RunState]:
    own = data_dir.resolve()
    return [state for path, state in running_clusters() if path != own]


def _overlaps(cidr: str, others: list[RunState]) -> RunState | None:
    network = ipaddress.ip_network(cidr, strict=False)
    for state in others:
        theirs = ipaddress.ip_network(state.service_cidr or DEFAULT_SERVICE_CIDR, strict=False)
        if network.version == theirs.version and network.overlaps(theirs):
            return state
    return None


def _who(state: RunState) -> str:
    return f"cluster {state.name!r} (PID {state.pid})" if state.name else f"PID {state.pid}"


def service_cidr(given: str | None, data_dir: Path) -> Choice:
    """The service range of the cluster of ``data_dir``: ``given``, else the one it recorded (or the default, for a
    store made before ranges were recorded), else, for a new cluster, the first candidate no running cluster has."""
    others = _others(data_dir)
    if given is None:
        given = str(recorded(data_dir).get("serviceCIDR") or "") or None
        if given is None and (data_dir / "state.db").exists():
            given = DEFAULT_SERVICE_CIDR
    if given is not None:
        clash = _overlaps(given, others)
        if clash is None:
            return Choice(given)
        return Choice(given, f"minik: warning: the service range {given} overlaps that of {_who(clash)}: their "
                             "cluster IPs collide on this machine (a new cluster takes another range with "
                             "--service-cidr)")
    holder = _overlaps(DEFAULT_SERVICE_CIDR, others)
    if holder is None:
        return Choice(DEFAULT_SERVICE_CIDR)
    for candidate in CANDIDATE_RANGES:
        if _overlaps(candidate, others) is None:
            return Choice(candidate, f"minik: the service range {DEFAULT_SERVICE_CIDR} is taken by {_who(holder)}; "
                                     f"this cluster takes {candidate} (choose one with --service-cidr)")
    raise ValueError(f"every service range minik would choose is taken ({', '.join(CANDIDATE_RANGES)}): choose one "
                     "with --service-cidr")


def _free(bind: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((bind, port))
        except OSError:
            return False
    return True


def port(given: int | None, data_dir: Path, bind: str) -> Choice:
    """The API port: ``given``, else the one the cluster recorded or 6443; when another running cluster listens
    on that one, the next port free. (A port held by anything else is left for the listener to report.)"""
    if given is not None:
        return Choice(given)
    wanted = recorded(data_dir).get("port")
    start = wanted if isinstance(wanted, int) and wanted > 0 else DEFAULT_PORT
    taken = {state.port: state for state in _others(data_dir) if state.port}
    holder = taken.get(start)
    if holder is None:
        return Choice(start)
    for candidate in range(start + 1, start + 1 + PORT_TRIES):
        if candidate not in taken and _free(bind, candidate):
            return Choice(candidate, f"minik: port {start} is {_who(holder)}'s; this cluster listens on "
                                     f"{candidate} (choose one with --port)")
    raise ValueError(f"port {start} is {_who(holder)}'s and no port up to {start + PORT_TRIES} is free: choose one "
                     "with --port")
