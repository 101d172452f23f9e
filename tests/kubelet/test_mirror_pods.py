"""The control plane shows in kube-system as kubeadm's does: each in-process component of `minik up` is a mirror
pod of the local node, labelled as kubeadm labels it, Running and Ready while the component serves, recreated
when deleted, gone when the component does not run; `kubectl logs` streams the component's own log lines; the
kube-dns Service selects the DNS pod and its Endpoints are where the DNS listens."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import structlog

from minik.client import Client
from minik.cluster import Cluster, ClusterSettings
from minik.kubelet.component import NodeComponent
from minik.proxy import ProxySettings
from tests.access import admin_kubeconfig
from tests.kubelet.helpers import wait_for_pod

NODE = "cp-node"
PODS = ["kube-apiserver", "kube-controller-manager", "kube-dns", "kube-proxy", "kube-scheduler"]


@contextlib.asynccontextmanager
async def control_plane(data_dir: Path, **settings: object) -> AsyncIterator[tuple[Cluster, Client]]:
    """A cluster with every component and a local node on the fake runtime (its proxy without iptables)."""
    options: dict[str, object] = {"proxy": ProxySettings(node_name=NODE, iptables=False, dns_upstreams=())}
    options.update(settings)
    async with Cluster(ClusterSettings(data_dir=data_dir, port=0, synchronous="NORMAL", node_name=NODE,
                                       node_runtime="fake", **options)) as cluster:  # type: ignore[arg-type]
        async with cluster.admin_client() as client:
            yield cluster, client


def ready(pod: dict) -> bool:
    return pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


async def wait_all_ready(client: Client, names: list[str]) -> dict[str, dict]:
    return {name: await wait_for_pod(client, f"{name}-{NODE}", ready, namespace="kube-system") for name in names}


async def kubectl(tmp_path: Path, config: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "kubectl-cache"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, out.decode(), err.decode()


async def test_kubectl_lists_the_control_plane_pods_running_and_ready_with_kubeadms_labels(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "c") as (cluster, client):
        pods = await wait_all_ready(client, PODS)
        config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
        code, out, err = await kubectl(tmp_path, config, "get", "pods", "-n", "kube-system")
        assert code == 0, err
        rows = [line.split() for line in out.splitlines()[1:]]
        assert [(r[0], r[1], r[2]) for r in rows] == [(f"{name}-{NODE}", "1/1", "Running") for name in PODS]
        for selector, name in (("component=kube-scheduler,tier=control-plane", "kube-scheduler"),
                               ("component=kube-apiserver,tier=control-plane", "kube-apiserver"),
                               ("component=kube-controller-manager", "kube-controller-manager"),
                               ("k8s-app=kube-dns", "kube-dns"), ("k8s-app=kube-proxy", "kube-proxy")):
            code, out, err = await kubectl(tmp_path, config, "get", "pods", "-n", "kube-system", "-l", selector,
                                           "-o", "name")
            assert out.split() == [f"pod/{name}-{NODE}"], (selector, err)
        scheduler = pods["kube-scheduler"]
        meta = scheduler["metadata"]
        assert meta["annotations"]["kubernetes.io/config.mirror"] == meta["annotations"]["kubernetes.io/config.hash"]
        node = await client.get("nodes", NODE)
        assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": NODE,
                                            "uid": node["metadata"]["uid"], "controller": True}]
        assert scheduler["spec"]["priorityClassName"] == "system-node-critical"
        assert scheduler["spec"]["priority"] == 2000001000
        # the kubelet shows them and never runs them
        component: NodeComponent = cluster.components["node"]  # type: ignore[assignment]
        assert component.local is not None
        assert not set(await component.local.runtime.pods()) & {p["metadata"]["uid"] for p in pods.values()}


async def test_kubectl_logs_streams_the_components_own_lines(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "c") as (cluster, client):
        await wait_all_ready(client, ["kube-scheduler", "kube-apiserver"])
        config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
        code, out, err = await kubectl(tmp_path, config, "logs", "-n", "kube-system", f"kube-scheduler-{NODE}")
        assert code == 0, err
        assert "scheduler started" in out
        code, apiserver, err = await kubectl(tmp_path, config, "logs", "-n", "kube-system", f"kube-apiserver-{NODE}")
        assert code == 0, err
        assert "bootstrap policy reconciled" in apiserver and "scheduler started" not in apiserver

        follower = await asyncio.create_subprocess_exec(
            "kubectl", "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "kubectl-cache"), "logs", "-f",
            "-n", "kube-system", f"kube-scheduler-{NODE}", stdout=asyncio.subprocess.PIPE)
        try:
            assert follower.stdout is not None

            async def next_line() -> str:
                return (await asyncio.wait_for(follower.stdout.readline(), 20)).decode()  # type: ignore[union-attr]

            while "scheduler started" not in await next_line():  # what was kept, then it follows
                pass
            marker = f"followed line {os.getpid()}"
            structlog.get_logger("minik.scheduler.queue").info(marker)  # the scheduler's logger, as it logs
            while marker not in await next_line():
                pass
            structlog.get_logger("minik.controllers.job").info("not the scheduler's")
            structlog.get_logger("minik.scheduler").info(marker + " again")
            while "again" not in (line := await next_line()):
                assert "not the scheduler's" not in line
        finally:
            follower.kill()
            await follower.wait()
        exec_code, _out, exec_err = await kubectl(tmp_path, config, "exec", "-n", "kube-system",
                                                  f"kube-scheduler-{NODE}", "--", "true")
        assert exec_code == 1 and "part of minik's own process" in exec_err


async def test_a_deleted_mirror_pod_is_recreated(tmp_path: Path) -> None:
    async with control_plane(tmp_path / "c") as (cluster, client):
        before = (await wait_all_ready(client, ["kube-scheduler"]))["kube-scheduler"]
        config = admin_kubeconfig(cluster, tmp_path / "kubeconfig")
        code, out, err = await kubectl(tmp_path, config, "delete", "pod", "-n", "kube-system",
                                       f"kube-scheduler-{NODE}")
        assert (code, out.strip()) == (0, f'pod "kube-scheduler-{NODE}" deleted'), err
        after = await wait_for_pod(client, f"kube-scheduler-{NODE}",
                                   lambda p: p["metadata"]["uid"] != before["metadata"]["uid"] and ready(p),
                                   namespace="kube-system")
        assert after["metadata"]["labels"] == {"component": "kube-scheduler", "tier": "control-plane"}
        code, out, err = await kubectl(tmp_path, config, "delete", "pod", "-n", "kube-system",  # at once, too
                                       f"kube-scheduler-{NODE}", "--grace-period=0", "--force")
        assert code == 0, err
        await wait_for_pod(client, f"kube-scheduler-{NODE}",
                           lambda p: p["metadata"]["uid"] not in (before["metadata"]["uid"], after["metadata"]["uid"])
                           and ready(p), namespace="kube-system")


async def test_a_component_that_does_not_run_has_no_pod_and_a_dns_that_cannot_listen_is_not_ready(
        tmp_path: Path) -> None:
    data = tmp_path / "c"
    async with control_plane(data) as (_cluster, client):
        await wait_all_ready(client, ["kube-scheduler"])
    # restarted without the scheduler, and with a DNS that cannot listen (an address of no interface here)
    async with control_plane(data, disabled=frozenset({"scheduler"}),
                             proxy=ProxySettings(node_name=NODE, iptables=False, dns_upstreams=(),
                                                 dns_addresses=("192.0.2.1",))
                             ) as (_cluster, client):
        await wait_all_ready(client, ["kube-apiserver", "kube-proxy"])
        dns = await wait_for_pod(client, f"kube-dns-{NODE}", lambda p: bool(p["status"].get("containerStatuses"))
                                 and not ready(p), namespace="kube-system")
        assert dns["status"]["phase"] == "Running" and dns["status"]["containerStatuses"][0]["ready"] is False
        deadline = asyncio.get_running_loop().time() + 15
        while f"kube-scheduler-{NODE}" in [p["metadata"]["name"] for p in
                                            (await client.list("pods", "kube-system"))["items"]]:
            assert asyncio.get_running_loop().time() < deadline, "the scheduler's pod was not removed"
            await asyncio.sleep(0.05)
        restarted = await wait_for_pod(client, f"kube-apiserver-{NODE}",  # minik restarted: so did the API server
                                       lambda p: p["status"]["containerStatuses"][0]["restartCount"] == 1,
                                       namespace="kube-system")
        assert ready(restarted)


async def test_the_kube_dns_service_selects_the_dns_pod_and_its_endpoints_are_where_the_dns_listens(
        tmp_path: Path) -> None:
    async with control_plane(tmp_path / "c") as (cluster, client):
        dns = (await wait_all_ready(client, ["kube-dns"]))["kube-dns"]
        service = await client.get("services", "kube-dns", "kube-system")
        assert service["spec"]["selector"] == {"k8s-app": "kube-dns"}
        proxy = cluster.components["proxy"]
        assert proxy.dns is not None  # type: ignore[attr-defined]
        port = proxy.dns.port  # type: ignore[attr-defined]
        bridge = dns["status"]["podIP"]
        assert bridge in proxy.dns.addresses and not bridge.startswith("127.")  # type: ignore[attr-defined]

        async def endpoints() -> dict | None:
            try:
                found = await client.get("endpoints", "kube-dns", "kube-system")
            except Exception:  # noqa: BLE001 - not made yet
                return None
            return found if found.get("subsets") else None

        deadline = asyncio.get_running_loop().time() + 15
        while (found := await endpoints()) is None:
            assert asyncio.get_running_loop().time() < deadline, "no kube-dns endpoints"
            await asyncio.sleep(0.05)
        subset = found["subsets"][0]
        assert [a["ip"] for a in subset["addresses"]] == [bridge]
        assert sorted((p["name"], p["port"], p["protocol"]) for p in subset["ports"]) == [
            ("dns", port, "UDP"), ("dns-tcp", port, "TCP")]
        assert json.dumps(subset["addresses"][0]["targetRef"]["name"]) == json.dumps(f"kube-dns-{NODE}")
