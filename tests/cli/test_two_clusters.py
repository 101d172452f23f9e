"""Two clusters on one machine: the second takes a service range (and, when its default port is another
cluster's, a port) of its own, says so, and keeps them when it restarts."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from cli_helpers import api_request, run_minik

from minik.cli import network
from minik.cli.instance import Instance, running_clusters


def kubernetes_ip(data: Path) -> str:
    url = json.loads((data / "running.json").read_text())["url"]
    return str(api_request("GET", f"{url}/api/v1/namespaces/default/services/kubernetes",
                           data / "kubeconfig")["spec"]["clusterIP"])


def test_a_second_cluster_takes_another_service_range_and_keeps_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))  # this process sees the clusters its commands start
    a, b = home / ".minik" / "a", home / ".minik" / "b"
    bare = ["--port", "0", "--no-node", "--disable", "scheduler,controllers,proxy"]
    first = run_minik(home, "up", "-d", "--name", "a", *bare)
    assert first.returncode == 0, first.stderr
    try:
        second = run_minik(home, "up", "-d", "--name", "b", *bare)
        assert second.returncode == 0, second.stderr
        pid = json.loads((a / "running.json").read_text())["pid"]
        assert second.stdout.splitlines()[0] == (
            f"minik: the service range 10.96.0.0/12 is taken by cluster 'a' (PID {pid}); this cluster takes "
            "10.112.0.0/12 (choose one with --service-cidr)")
        assert (kubernetes_ip(a), kubernetes_ip(b)) == ("10.96.0.1", "10.112.0.1")
        assert [(path.name, state.service_cidr) for path, state in running_clusters()] == [
            ("a", "10.96.0.0/12"), ("b", "10.112.0.0/12")]
        assert run_minik(home, "down", "--name", "a").returncode == 0
        assert run_minik(home, "down", "--name", "b").returncode == 0
        again = run_minik(home, "up", "-d", "--name", "b", *bare)  # alone now, and still in its own range
        assert again.returncode == 0, again.stderr
        assert not again.stdout.startswith("minik: the service range")
        assert kubernetes_ip(b) == "10.112.0.1"
    finally:
        for name in ("a", "b"):
            run_minik(home, "down", "--name", name)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_port_another_cluster_listens_on_is_passed_over_for_the_next_free_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    other = Instance(tmp_path / "other")
    other.acquire()  # a running cluster, as its process publishes itself
    try:
        port = free_port()
        other.publish(f"https://127.0.0.1:{port}", "other", ())
        mine = tmp_path / "mine"
        mine.mkdir()
        network.record(mine, "10.96.0.0/12", port)  # the port this cluster used before
        chosen = network.port(None, mine, "127.0.0.1")
        assert isinstance(chosen.value, int) and chosen.value > port
        assert chosen.note == (f"minik: port {port} is cluster 'other' (PID {os.getpid()})'s; this cluster "
                               f"listens on {chosen.value} (choose one with --port)")
        assert network.port(7000, mine, "127.0.0.1") == network.Choice(7000)  # given: the listener will say
    finally:
        other.release()
    assert network.port(None, mine, "127.0.0.1") == network.Choice(port)
    assert running_clusters() == []
