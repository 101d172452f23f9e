"""`minik up`'s control plane seen with kubectl, as on a kubeadm cluster: its components are pods in kube-system,
and `kubectl logs` of one gives that component's lines of minik's JSON log."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_helpers import run_minik, subprocess_env, wait_for


def kubectl(home: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", str(home / ".minik" / "minik" / "kubeconfig"), "--cache-dir",
                           str(tmp_path / "kubectl-cache"), *args], capture_output=True, text=True, timeout=60,
                          env=subprocess_env(home))


def test_kubectl_logs_of_a_control_plane_pod_is_its_components_json_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    up = run_minik(home, "up", "-d", "--port", "0", "--runtime", "fake", "--node-name", "cp", "--disable", "proxy")
    assert up.returncode == 0, up.stderr
    try:
        def listed() -> list[str]:
            got = kubectl(home, tmp_path, "get", "pods", "-n", "kube-system", "--no-headers")
            return [line.split()[0] for line in got.stdout.splitlines() if line.split()[1:3] == ["1/1", "Running"]]

        wait_for(lambda: len(listed()) == 3, what="the control plane pods running")
        assert listed() == ["kube-apiserver-cp", "kube-controller-manager-cp", "kube-scheduler-cp"]

        logs = kubectl(home, tmp_path, "logs", "-n", "kube-system", "kube-scheduler-cp")
        assert logs.returncode == 0, logs.stderr
        lines = [json.loads(line) for line in logs.stdout.splitlines()]
        assert {"event": "scheduler started", "logger": "minik.scheduler", "level": "info"}.items() <= next(
            line for line in lines if line["event"] == "scheduler started").items()
        assert not [line for line in lines if line["logger"].startswith(("minik.apiserver", "minik.controllers"))]
        assert lines == [json.loads(line) for line in (home / ".minik" / "minik" / "minik.log").read_text()
                         .splitlines() if json.loads(line) in lines]  # as minik's log has them, in its order
        tail = kubectl(home, tmp_path, "logs", "-n", "kube-system", "kube-scheduler-cp", "--tail", "1",
                       "--timestamps")
        assert tail.stdout.count("\n") == 1 and tail.stdout.split(" ", 1)[0].endswith("Z"), tail.stdout
    finally:
        assert run_minik(home, "down").returncode == 0
