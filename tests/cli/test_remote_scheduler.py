"""`minik scheduler --server URL` schedules the pods of a cluster started with `--disable scheduler`: --server
replaces only the server of the kubeconfig found as usual (here the local cluster's), whose CA and credentials
it keeps."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from cli_helpers import api_request, minik_command, run_minik, subprocess_env, wait_for


def test_a_scheduler_run_with_server_places_the_pods_of_a_cluster_started_without_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    up = run_minik(home, "up", "-d", "--port", "0", "--disable", "scheduler,proxy", "--no-node", "--fake-nodes", "1")
    assert up.returncode == 0, up.stderr
    config = home / ".minik" / "minik" / "kubeconfig"
    try:
        url = json.loads((home / ".minik" / "minik" / "running.json").read_text())["url"]
        pods = f"{url}/api/v1/namespaces/default/pods"
        api_request("POST", pods, config, {"metadata": {"name": "waiting"},
                                           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        scheduler = subprocess.Popen(minik_command("scheduler", "--server", url), env=subprocess_env(home),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            node = wait_for(lambda: api_request("GET", f"{pods}/waiting", config)["spec"].get("nodeName"),
                            what="the pod's binding")
            assert node == "fake-node-000"
        finally:
            scheduler.send_signal(signal.SIGINT)
            _out, err = scheduler.communicate(timeout=30)
        assert scheduler.returncode == 0, err
        assert f"minik: scheduler 'default-scheduler' running against {url}" in err
        assert "stopped after binding 1 pods" in err
    finally:
        assert run_minik(home, "down").returncode == 0
