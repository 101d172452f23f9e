"""`minik get`: the server's Table columns in kubectl's layout, selectors, all namespaces, the -o formats, watches."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import yaml
from cli_helpers import Invoke, minik_command, subprocess_env

from minik.api.resources import REGISTRY
from minik.cli.get import TablePrinter, rows_of
from minik.client import Client
from minik.testing.namespaces import create_namespace


def pod(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def make_pods(client: Client) -> None:
    await create_namespace(client, "team")
    await client.create("pods", pod("web", app="web"), "default")
    await client.create("pods", pod("db", app="db"), "default")
    await client.create("pods", pod("web-team", app="web"), "team")


def cells(line: str) -> list[str]:
    return line.split()


async def test_get_prints_the_servers_columns_in_kubectls_layout(minik: Invoke, client: Client) -> None:
    await make_pods(client)
    result = await minik("get", "pods")
    assert result.exit_code == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert header.startswith("NAME   READY   STATUS    RESTARTS   AGE")  # padded to the widest cell + 3
    assert [cells(r)[:3] for r in rows] == [["db", "0/1", "Pending"], ["web", "0/1", "Pending"]]

    namespaces = await minik("get", "ns")
    assert namespaces.stdout.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    assert [cells(r)[0] for r in namespaces.stdout.splitlines()[1:]] == [
        "default", "kube-node-lease", "kube-public", "kube-system", "team"]


async def test_wide_adds_the_servers_extra_columns(minik: Invoke, client: Client) -> None:
    await make_pods(client)
    wide = await minik("get", "po", "web", "-o", "wide")
    assert wide.stdout.splitlines()[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert cells(wide.stdout.splitlines()[1])[5:7] == ["<none>", "<none>"]


async def test_label_selectors_and_all_namespaces(minik: Invoke, client: Client) -> None:
    await make_pods(client)
    selected = await minik("get", "pods", "-l", "app=web")
    assert [cells(r)[0] for r in selected.stdout.splitlines()[1:]] == ["web"]

    everywhere = await minik("get", "pods", "-A", "-l", "app in (web)")
    header, *rows = everywhere.stdout.splitlines()
    assert header.split()[:2] == ["NAMESPACE", "NAME"]
    assert [cells(r)[:2] for r in rows] == [["default", "web"], ["team", "web-team"]]

    in_team = await minik("get", "pods", "-n", "team", "--show-labels")
    assert in_team.stdout.splitlines()[0].split()[-1] == "LABELS"
    assert cells(in_team.stdout.splitlines()[1])[-1] == "app=web"

    none = await minik("get", "pods", "-l", "app=nothing")
    assert none.exit_code == 0 and none.stdout == ""
    assert none.stderr.strip() == "No resources found in default namespace."


async def test_output_name_yaml_and_json(minik: Invoke, client: Client) -> None:
    await make_pods(client)
    names = await minik("get", "pods", "-o", "name")
    assert names.stdout.splitlines() == ["pod/db", "pod/web"]
    await client.create("deployments", {
        "metadata": {"name": "api"}, "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": {
            "metadata": {"labels": {"app": "api"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}},
        "default")
    assert (await minik("get", "deploy", "-o", "name")).stdout.splitlines() == ["deployment.apps/api"]

    one = yaml.safe_load((await minik("get", "pod", "web", "-o", "yaml")).stdout)
    assert (one["kind"], one["apiVersion"], one["metadata"]["name"]) == ("Pod", "v1", "web")
    listed = json.loads((await minik("get", "pods", "-o", "json", "-l", "app")).stdout)
    assert listed["kind"] == "List" and listed["metadata"] == {"resourceVersion": ""}
    assert [(i["kind"], i["metadata"]["name"]) for i in listed["items"]] == [("Pod", "db"), ("Pod", "web")]
    text = (await minik("get", "pod", "web", "-o", "json")).stdout
    assert text.startswith('{\n    "apiVersion": "v1",\n    "kind": "Pod",\n')


async def test_several_types_and_type_slash_name(minik: Invoke, client: Client) -> None:
    await make_pods(client)
    await client.create("configmaps", {"metadata": {"name": "cfg"}, "data": {"a": "1"}}, "default")
    both = await minik("get", "po,cm")
    pods, configmaps = both.stdout.split("\n\n")
    assert [cells(r)[0] for r in pods.splitlines()[1:]] == ["pod/db", "pod/web"]
    assert configmaps.splitlines()[0].split() == ["NAME", "DATA", "AGE"]
    assert cells(configmaps.splitlines()[1])[:2] == ["configmap/cfg", "1"]
    slashed = await minik("get", "pod/web", "configmap/cfg", "-o", "name")
    assert slashed.stdout.splitlines() == ["pod/web", "configmap/cfg"]


async def test_missing_objects_and_unknown_types_are_errors(minik: Invoke, client: Client) -> None:
    await make_pods(client)
    partly = await minik("get", "pods", "web", "nope")
    assert partly.exit_code == 1
    assert [cells(r)[0] for r in partly.stdout.splitlines()[1:]] == ["web"]
    assert partly.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    unknown = await minik("get", "widgets")
    assert unknown.exit_code == 1
    assert unknown.stderr.strip() == 'error: the server doesn\'t have a resource type "widgets"'


def test_a_server_without_tables_gets_name_and_age() -> None:
    listing = {"kind": "PodList", "items": [{"metadata": {"name": "a", "namespace": "x",
                                                          "creationTimestamp": "2000-01-01T00:00:00Z"}}]}
    columns, rows = rows_of(listing, None)
    printer = TablePrinter(REGISTRY.resolve("pods"), columns, wide=False, namespaces=True, show_kind=False,
                           show_labels=False)
    header, row = printer.lines(rows)
    assert header == "NAMESPACE   NAME   AGE"
    assert row.split()[:2] == ["x", "a"] and row.split()[2].endswith("y")


async def test_the_cli_runs_its_own_loop_while_the_clusters_loop_keeps_serving(minik: Invoke, client: Client,
                                                                               tmp_path: Path) -> None:
    """A command runs in a thread on its own loop; meanwhile the test's loop serves it and a watch, with no
    deadlock (CliRunner swaps sys.stdout, so commands themselves run one at a time)."""
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seen}\n")

    async def first_added() -> str:
        async with client.watch("configmaps", "default", resource_version="0") as events:
            async for _kind, obj in events:
                return str(obj["metadata"]["name"])
        return ""

    watching = asyncio.create_task(first_added())
    applied = await asyncio.wait_for(minik("apply", "-f", str(tmp_path / "cm.yaml")), 30)
    assert applied.stdout.strip() == "configmap/seen created"
    assert await asyncio.wait_for(watching, 10) == "seen"


async def test_watch_prints_changes_until_interrupted(kubeconfig: Path, client: Client, home: Path) -> None:
    await client.create("pods", pod("first-pod"), "default")
    process = await asyncio.create_subprocess_exec(
        *minik_command("get", "pods", "-w", "--kubeconfig", str(kubeconfig)), env=subprocess_env(home),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    try:
        lines = [(await asyncio.wait_for(process.stdout.readline(), 20)).decode() for _ in range(2)]
        assert lines[0].split()[:3] == ["NAME", "READY", "STATUS"] and lines[1].split()[0] == "first-pod"
        await client.create("pods", pod("second"), "default")
        added = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        assert added.split()[:3] == ["second", "0/1", "Pending"]
        assert added.index("0/1") == lines[1].index("0/1")  # column widths are kept across events
        await client.delete("pods", "first-pod", "default")
        assert (await asyncio.wait_for(process.stdout.readline(), 20)).decode().split()[0] == "first-pod"
    finally:
        process.send_signal(signal.SIGINT)
        await asyncio.wait_for(process.wait(), 20)
    assert process.returncode == 130
