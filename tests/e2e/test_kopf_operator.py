"""A real kopf operator (tests/operators/website_operator.py, its CRD beside it) runs unchanged against minik: as a
`kopf run` subprocess with the admin's kubeconfig, not --standalone, so with kopf's peering resources that a user
applies first as kopf's documentation has them. It reconciles a Website into a Deployment that the Website owns,
follows spec changes, keeps its bookkeeping on the Website (finalizer, last-handled-configuration, status), posts
Events, renews its keep-alive in the peering object, and lets the garbage collector take the Deployment when the
Website goes. Namespaced (`--namespace`, a KopfPeering) and cluster-wide (`--all-namespaces`, a
ClusterKopfPeering)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubectl_helpers import Kubectl

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.controllers.manager import ControllerSettings
from tests.access import admin_kubeconfig, admin_session

pytestmark = pytest.mark.timeout(60)

Obj = dict[str, Any]

OPERATORS = Path(__file__).resolve().parent.parent / "operators"
GROUP = "ops.minik.test"
NAMESPACE = "web"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
LAST_HANDLED = "kopf.zalando.org/last-handled-configuration"
#: seconds a keep-alive lasts: kopf renews it every second then (lifetime minus 5-10 s, at least 1 s)
PEERING_LIFETIME = "3"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    """The API server with the garbage collector, which removes a Deployment whose Website is gone (the kubectl
    fixture drives this cluster too)."""
    settings = ClusterSettings(data_dir=tmp_path / "cluster", port=0, synchronous="NORMAL",
                               disabled=frozenset(COMPONENTS) - {"controllers"},
                               controllers=ControllerSettings(workers=2, enabled=["garbage-collector"]))
    c = Cluster(settings)
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


class Operator:
    """`kopf run` as a subprocess, its log lines collected as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            self.lines.append(line.decode(errors="replace").rstrip())

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.process.wait(), 15)
        finally:
            if self.process.returncode is None:
                self.process.kill()
                await self.process.wait()
            await self.reader
        return code


async def start_operator(cluster: Cluster, home: Path, *scope: str) -> Operator:
    config = admin_kubeconfig(cluster, home / "kubeconfig")
    env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(home), "WEBSITE_PEERING_LIFETIME": PEERING_LIFETIME}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kopf", "run", "--verbose", *scope, str(OPERATORS / "website_operator.py"),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    return Operator(process)


async def install(kubectl: Kubectl, peering: Obj) -> None:
    """What a user does before running the operator: kopf's peering CRDs and the operator's own CRD, then the
    peering object the operator joins (kopf's default name, "default")."""
    await kubectl("apply", "-f", str(OPERATORS / "peering.yaml"), "-f", str(OPERATORS / "website-crd.yaml"))
    await kubectl("wait", "--for", "condition=established", "--timeout=10s", "crd/clusterkopfpeerings.kopf.dev",
                  "crd/kopfpeerings.kopf.dev", f"crd/websites.{GROUP}")
    await kubectl("create", "namespace", NAMESPACE)
    await kubectl("apply", "-f", kubectl.manifest("peering-object.yaml", peering))


async def eventually(check: Callable[[], Awaitable[Any]], operator: Operator, what: str,
                     timeout: float = 15.0) -> Any:
    """Poll ``check`` until it returns something true; that value (on a timeout, the operator's log says why)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert operator.process.returncode is None, f"kopf exited ({operator.process.returncode}):\n{operator.log}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s; kopf said:\n{operator.log}"
        await asyncio.sleep(0.05)


class Api:
    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def get(self, path: str) -> Obj | None:
        """The object at ``path``, or None when it is not there (404)."""
        async with self.session.get(path) as response:
            if response.status == 404:
                return None
            assert response.status == 200, await response.text()
            return await response.json()

    async def send(self, method: str, path: str, body: Obj, content_type: str = "application/json") -> Obj:
        async with self.session.request(method, path, data=json.dumps(body),
                                        headers={"Content-Type": content_type}) as response:
            assert response.status in (200, 201), await response.text()
            return await response.json()


def website(name: str, replicas: int) -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Website", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"image": "nginx:1.27", "replicas": replicas}}


WEBSITES = f"/apis/{GROUP}/v1/namespaces/{NAMESPACE}/websites"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"


async def reconcile_a_website(api: Api, operator: Operator, peering_path: str) -> None:
    """The operator's whole life with one Website, asserted step by step."""
    # kopf joined the peering object and renews its keep-alive there
    async def peers() -> Obj | None:
        peering = await api.get(peering_path)
        return (peering or {}).get("status") or None
    first = await eventually(peers, operator, "kopf's keep-alive in the peering object")
    [(identity, keepalive)] = first.items()
    assert keepalive["priority"] == 0 and keepalive["lifetime"] == int(PEERING_LIFETIME)

    async def renewed() -> bool:
        status = await peers() or {}
        return identity in status and status[identity]["lastseen"] > keepalive["lastseen"]
    await eventually(renewed, operator, "a renewed keep-alive")

    # a Website becomes a Deployment that it owns
    created = await api.send("POST", WEBSITES, website("blog", 2))
    uid = created["metadata"]["uid"]

    async def deployment() -> Obj | None:
        return await api.get(f"{DEPLOYMENTS}/blog")
    owned = await eventually(deployment, operator, "the Website's Deployment")
    assert owned["metadata"]["ownerReferences"] == [{
        "apiVersion": f"{GROUP}/v1", "kind": "Website", "name": "blog", "uid": uid, "controller": True,
        "blockOwnerDeletion": True}]
    assert owned["spec"]["replicas"] == 2
    assert owned["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"

    # kopf's bookkeeping on the Website: its finalizer, the configuration it handled, the handlers' status
    async def handled(replicas: int) -> Obj | None:
        current = await api.get(f"{WEBSITES}/blog") or {}
        annotations = current.get("metadata", {}).get("annotations") or {}
        last = json.loads(annotations.get(LAST_HANDLED, "{}"))
        status = current.get("status") or {}
        done = last.get("spec", {}).get("replicas") == replicas and status.get("replicas") == replicas
        return current if done else None
    bookkept = await eventually(lambda: handled(2), operator, "kopf's last-handled-configuration and status")
    assert bookkept["metadata"]["finalizers"] == [FINALIZER]
    assert json.loads(bookkept["metadata"]["annotations"][LAST_HANDLED]) == {
        "spec": {"image": "nginx:1.27", "replicas": 2}}
    assert bookkept["status"] == {"deployment": "blog", "replicas": 2, "create_deployment": {"deployment": "blog"}}
    assert bookkept["metadata"]["generation"] == 1  # status and metadata writes leave the generation alone

    # the Event the operator posted about it
    async def posted() -> list[Obj]:
        events = await api.get(f"/api/v1/namespaces/{NAMESPACE}/events?fieldSelector=involvedObject.uid%3D{uid}")
        return [e for e in (events or {}).get("items", []) if e["reason"] == "DeploymentCreated"]
    [event] = await eventually(posted, operator, "the operator's Event")
    assert event["involvedObject"]["kind"] == "Website" and event["involvedObject"]["name"] == "blog"
    assert event["type"] == "Normal" and event["source"] == {"component": "kopf"}
    assert event["message"] == "Deployment blog serves this website"
    # kopf writes its timestamps with Python's isoformat() ("...:34.819123+00:00"); they read back as Kubernetes
    # writes them, in UTC, to the second and (eventTime, a MicroTime) to the microsecond
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", event["lastTimestamp"]), event
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"]), event

    # a spec change scales the Deployment
    await api.send("PATCH", f"{WEBSITES}/blog", {"spec": {"replicas": 4}}, "application/merge-patch+json")

    async def scaled() -> bool:
        return ((await deployment()) or {}).get("spec", {}).get("replicas") == 4
    await eventually(scaled, operator, "the Deployment scaled to the Website's replicas")
    rescaled = await eventually(lambda: handled(4), operator, "kopf's bookkeeping of the scaling")
    assert rescaled["metadata"]["generation"] == 2

    # deleting the Website runs kopf's deletion handler, which lifts its finalizer; the Deployment goes with it
    async with api.session.delete(f"{WEBSITES}/blog") as response:
        assert response.status == 200, await response.text()
        assert (await response.json())["metadata"]["deletionTimestamp"]  # held by kopf's finalizer

    async def website_gone() -> bool:
        return await api.get(f"{WEBSITES}/blog") is None
    await eventually(website_gone, operator, "the Website deleted once kopf lifted its finalizer")
    assert operator.said("Handler 'farewell' succeeded.")

    async def deployment_gone() -> bool:
        return await deployment() is None
    await eventually(deployment_gone, operator, "the Deployment garbage-collected")


def assert_no_trouble(operator: Operator) -> None:
    """kopf logged no failed API request (it retries or gives up with a warning, an error or a traceback) and
    every keep-alive found its peering object."""
    trouble = [line for line in operator.lines
               if any(word in line for word in ("[WARNING", "[ERROR", "[CRITICAL", "Traceback", "APIClientError",
                                               "APIError", "Failed to post an event"))]
    assert not trouble, "\n".join(trouble)
    keepalives = [line for line in operator.lines if "Keep-alive in 'default'" in line]
    assert keepalives and all(line.endswith(": ok.") for line in keepalives), "\n".join(keepalives)


@pytest.mark.parametrize("scope", ["namespaced", "cluster-wide"])
async def test_a_kopf_operator_reconciles_a_website_into_a_deployment_it_owns(
        cluster: Cluster, kubectl: Kubectl, tmp_path: Path, scope: str) -> None:
    if scope == "namespaced":
        peering: Obj = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
                        "metadata": {"name": "default", "namespace": NAMESPACE}}
        peering_path = f"/apis/kopf.dev/v1/namespaces/{NAMESPACE}/kopfpeerings/default"
        flags = ("--namespace", NAMESPACE)
    else:
        peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "default"}}
        peering_path = "/apis/kopf.dev/v1/clusterkopfpeerings/default"
        flags = ("--all-namespaces",)
    await install(kubectl, peering)
    operator = await start_operator(cluster, tmp_path / "operator", *flags)
    async with admin_session(cluster) as session:
        api = Api(session)
        try:
            await reconcile_a_website(api, operator, peering_path)
        finally:
            code = await operator.stop()
        assert code == 0, operator.log
        # on its way out kopf takes its keep-alive out of the peering object
        assert ((await api.get(peering_path)) or {}).get("status") == {}
    assert_no_trouble(operator)
