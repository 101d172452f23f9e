"""Client commands find their server as kubectl does: --kubeconfig, else the files of $KUBECONFIG merged (the
first file wins for each name, the current context comes from the first file that sets one), else the local
cluster; --context picks a context, -n its namespace, --server the server (keeping the CA and credentials)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import invoke_cli

from minik import kubeconfig
from minik.client import Client
from minik.cluster import Cluster

BOGUS = "https://127.0.0.1:1"


def write(path: Path, **config: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write(path, {"apiVersion": "v1", "kind": "Config", **config})
    return path


def cluster_entry(name: str, server: str, **fields: str) -> dict:
    return {"name": name, "cluster": {"server": server, **fields}}


def context_entry(name: str, cluster: str, user: str, namespace: str | None = None) -> dict:
    return {"name": name, "context": {"cluster": cluster, "user": user, **({"namespace": namespace} if namespace
                                                                           else {})}}


@pytest.fixture
async def team(client: Client) -> None:
    """A namespace ``team`` with the ConfigMap ``in-team``; ``default`` has ``in-default``."""
    await client.create("namespaces", {"metadata": {"name": "team"}})
    await client.create("configmaps", {"metadata": {"name": "in-team"}}, "team")
    await client.create("configmaps", {"metadata": {"name": "in-default"}}, "default")


@pytest.fixture
def first(cluster: Cluster, tmp_path: Path) -> Path:
    """The first file of $KUBECONFIG: the real cluster (its CA in a file named relative to this kubeconfig), the
    admin, the context ``work`` in namespace team; no current context."""
    assert cluster.credentials is not None
    (tmp_path / "first" / "pki").mkdir(parents=True)
    (tmp_path / "first" / "pki" / "ca.crt").write_bytes(cluster.credentials.ca_pem)
    return write(tmp_path / "first" / "config",
                 clusters=[cluster_entry("test", cluster.url, **{"certificate-authority": "pki/ca.crt"})],
                 users=[{"name": "admin", "user": {"token": cluster.admin_token}}],
                 contexts=[context_entry("work", "test", "admin", "team")])


@pytest.fixture
def second(tmp_path: Path) -> Path:
    """The second file: the same names pointing nowhere, and the current context ``work``."""
    return write(tmp_path / "second" / "config", clusters=[cluster_entry("test", BOGUS)],
                 users=[{"name": "admin", "user": {"token": "wrong"}}],
                 contexts=[context_entry("work", "test", "admin", "default")], **{"current-context": "work"})


async def names(*args: str) -> list[str]:
    result = await invoke_cli(["get", "cm", "-o", "name", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout.split()


async def test_kubeconfig_files_are_merged_first_wins_and_the_current_context_comes_from_the_first_that_sets_it(
        team: None, first: Path, second: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{home / 'missing'}:{first}:{second}")  # a missing file is skipped
    # the context "work" (current in the second file) as the first file defines it: the real server, namespace team
    assert await names() == ["configmap/in-team"]
    assert await names("-n", "default") == ["configmap/in-default"]
    monkeypatch.setenv("KUBECONFIG", f"{second}:{first}")
    refused = await invoke_cli(["get", "cm"])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == ("The connection to the server 127.0.0.1:1 was refused - did you specify the "
                                      "right host or port?")


async def test_every_client_command_honours_KUBECONFIG(team: None, first: Path, home: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(first))
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n")
    work = ["--context", "work"]
    applied = await invoke_cli(["apply", "-f", str(manifest), *work])
    assert (applied.exit_code, applied.stdout.strip()) == (0, "configmap/applied created"), applied.stderr
    described = await invoke_cli(["describe", "cm", "applied", *work])
    assert described.exit_code == 0 and "Namespace:    team" in described.stdout, described.stdout
    assert (await invoke_cli(["delete", "cm", "applied", *work])).stdout.strip() == 'configmap "applied" deleted'
    for command in (["logs", "nope"], ["exec", "nope", "--", "true"]):  # they reach the server, in namespace team
        missing = await invoke_cli([*work, *command])  # before the command, as kubectl takes them too
        assert missing.exit_code == 1
        assert missing.stderr.strip() == 'Error from server (NotFound): pods "nope" not found', command


async def test_the_kubeconfig_flag_and_context_win_over_KUBECONFIG(team: None, first: Path, second: Path,
                                                                  home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(second))
    assert await names("--kubeconfig", str(first), "--context", "work") == ["configmap/in-team"]
    unknown = await invoke_cli(["get", "cm", "--kubeconfig", str(first), "--context", "elsewhere"])
    assert unknown.exit_code == 1
    assert unknown.stderr.strip() == 'error: invalid kubeconfig: context "elsewhere" is not in the kubeconfig'


async def test_server_replaces_the_clusters_server_and_keeps_its_ca_and_the_users_token(
        cluster: Cluster, team: None, second: Path, home: Path, tmp_path: Path) -> None:
    assert cluster.credentials is not None
    config = write(tmp_path / "moved", clusters=[cluster_entry("test", BOGUS, **{
        "certificate-authority-data": kubeconfig.for_cluster("x", "", ca_data=cluster.credentials.ca_pem)[
            "clusters"][0]["cluster"]["certificate-authority-data"]})],
        users=[{"name": "admin", "user": {"token": cluster.admin_token}}],
        contexts=[context_entry("work", "test", "admin")], **{"current-context": "work"})
    assert await names("--kubeconfig", str(config), "--server", cluster.url) == ["configmap/in-default"]


async def test_KUBECONFIG_naming_no_file_that_exists_is_an_error_not_the_local_cluster(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{home / 'a'}:{home / 'b'}")
    result = await invoke_cli(["get", "pods"])
    assert result.exit_code == 1
    assert result.stderr.strip() == ("error: invalid configuration: no configuration has been provided (none of the "
                                     f"files in $KUBECONFIG exists: {home / 'a'}, {home / 'b'})")


def test_files_a_kubeconfig_names_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "ca.crt").write_bytes(b"PEM")
    path = write(tmp_path / "kube" / "config", clusters=[cluster_entry("c", BOGUS, **{"certificate-authority":
                                                                                      "ca.crt"})],
                 users=[{"name": "u", "user": {}}], contexts=[context_entry("c", "c", "u")],
                 **{"current-context": "c"})
    assert kubeconfig.endpoint(path).ca_data == b"PEM"
    assert kubeconfig.endpoint_of(kubeconfig.load_merged([path])).ca_data == b"PEM"
