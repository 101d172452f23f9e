"""Kubeconfig files: written private, merged without losing other entries, read for --kubeconfig/--context."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from cli_helpers import invoke_cli

from minik import kubeconfig
from minik.cluster import Cluster


def test_merge_adds_the_clusters_entries_and_sets_the_context_only_when_none_is(tmp_path: Path) -> None:
    path = tmp_path / "config"
    assert kubeconfig.merge(path, kubeconfig.for_cluster("one", "http://127.0.0.1:1")) is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kubeconfig.merge(path, kubeconfig.for_cluster("two", "http://127.0.0.1:2")) is False
    assert kubeconfig.merge(path, kubeconfig.for_cluster("one", "http://127.0.0.1:3")) is False
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == "one"
    assert [c["name"] for c in config["contexts"]] == ["two", "one"]
    assert kubeconfig.endpoint(path).server == "http://127.0.0.1:3"
    assert kubeconfig.endpoint(path, "two").server == "http://127.0.0.1:2"


def test_the_user_kubeconfig_is_the_first_of_KUBECONFIG(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert kubeconfig.user_kubeconfig_path() == tmp_path / "a"
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kubeconfig.user_kubeconfig_path() == tmp_path / ".kube" / "config"


def test_a_broken_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("current-context: nowhere\ncontexts: []\n")
    with pytest.raises(kubeconfig.KubeconfigError, match='context "nowhere" is not in the kubeconfig'):
        kubeconfig.endpoint(path)


async def test_client_commands_use_the_kubeconfig_context_and_its_namespace(cluster: Cluster, tmp_path: Path,
                                                                            home: Path) -> None:
    assert cluster.credentials is not None
    config = kubeconfig.for_cluster("test", cluster.url, ca_data=cluster.credentials.ca_pem, token=cluster.admin_token)
    config["contexts"].append({"name": "team", "context": {"cluster": "test", "user": "test", "namespace": "team"}})
    path = tmp_path / "config"
    kubeconfig.write(path, config)
    async with cluster.admin_client() as client:
        await client.create("namespaces", {"metadata": {"name": "team"}})
        await client.create("configmaps", {"metadata": {"name": "in-team"}}, "team")
    default = await invoke_cli(["get", "cm", "-o", "name", "--kubeconfig", str(path)])
    assert default.stdout == "" and "in default namespace" in default.stderr
    team = await invoke_cli(["--kubeconfig", str(path), "--context", "team", "get", "cm", "-o", "name"])
    assert team.stdout.strip() == "configmap/in-team"
