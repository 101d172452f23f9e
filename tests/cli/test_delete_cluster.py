"""`minik delete-cluster` and `minik down --purge`: the cluster stops, its pods' Docker containers, its context in
the user's kubeconfig and its data directory go, and each removal is said."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import aiodocker
import yaml
from cli_helpers import api_request, run_minik, wait_for

from minik.kubelet.runtimes.select import kubelet_id


def containers(label: str) -> list[dict]:
    async def query() -> list[dict]:
        async with aiodocker.Docker() as docker:
            filters = json.dumps({"label": [label]})
            async with docker._query("containers/json", params={"all": "1", "filters": filters}) as response:
                return list(await response.json())
    return asyncio.run(query())


def test_delete_cluster_removes_its_containers_its_context_and_its_data(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".minik" / "minik"
    user_config = tmp_path / "kube" / "config"
    user_config.parent.mkdir()
    user_config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "work",
        "clusters": [{"name": "work", "cluster": {"server": "https://example.invalid"}}],
        "contexts": [{"name": "work", "context": {"cluster": "work", "user": "work"}}],
        "users": [{"name": "work", "user": {"token": "t"}}]}))
    up = run_minik(home, "up", "-d", "--port", "0", "--disable", "proxy", "--runtime", "docker", "--node-name",
                   "purged", "--update-kubeconfig", KUBECONFIG=str(user_config))
    assert up.returncode == 0, up.stderr
    label = f"minik.io/kubelet={kubelet_id(data / 'kubelet')}"
    try:
        url = json.loads((data / "running.json").read_text())["url"]
        pod = {"metadata": {"name": "sleeper"},
               "spec": {"nodeName": "purged", "terminationGracePeriodSeconds": 0, "containers": [{
                   "name": "c", "image": "busybox:latest", "imagePullPolicy": "IfNotPresent",
                   "command": ["sleep", "3600"]}]}}
        api_request("POST", f"{url}/api/v1/namespaces/default/pods", data / "kubeconfig", pod)
        wait_for(lambda: len([c for c in containers(label) if c["State"] == "running"]) == 2,
                 what="the pod's sandbox and container running")
    except BaseException:
        run_minik(home, "delete-cluster")
        raise

    deleted = run_minik(home, "delete-cluster", KUBECONFIG=str(user_config))
    assert deleted.returncode == 0, deleted.stderr
    lines = deleted.stdout.splitlines()
    assert re.fullmatch(r"minik: stopping cluster 'minik' \(PID \d+\)", lines[0])
    assert lines[1:] == [f"minik: removed 2 Docker containers (label {label})",
                         f"minik: removed context 'minik' from {user_config}",
                         f"minik: removed {data}",
                         "minik: cluster 'minik' deleted"]
    assert containers(label) == []
    assert not data.exists()
    kept = yaml.safe_load(user_config.read_text())
    assert [c["name"] for c in kept["contexts"]] == ["work"] and kept["current-context"] == "work"
    assert run_minik(home, "status").returncode == 3
    again = run_minik(home, "delete-cluster")
    assert (again.returncode, again.stderr.strip()) == (1, f"error: cluster 'minik' not found: {data} does not exist")


def test_down_purge_deletes_a_stopped_cluster_and_refuses_a_directory_minik_did_not_make(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    assert run_minik(home, "up", "-d", "--data-dir", str(data), "--port", "0", "--no-node", "--disable",
                     "scheduler,controllers,proxy").returncode == 0
    assert run_minik(home, "down", "--data-dir", str(data)).returncode == 0
    purged = run_minik(home, "down", "--purge", "--data-dir", str(data))
    assert purged.returncode == 0, purged.stderr
    assert purged.stdout.splitlines() == [f"minik: removed {data}", "minik: cluster 'minik' deleted"]
    assert not data.exists()

    other = tmp_path / "other"
    (other / "keep").mkdir(parents=True)
    refused = run_minik(home, "delete-cluster", "--data-dir", str(other))
    assert refused.returncode == 1
    assert refused.stderr.strip() == (f"error: {other} is not a minik data directory (it has no minik.lock or "
                                      "state.db); nothing removed")
    assert (other / "keep").exists()
