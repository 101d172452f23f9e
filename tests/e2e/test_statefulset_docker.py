"""A StatefulSet with storage end to end on real Docker (scheduler, controllers, proxy and its DNS, a Docker node,
the local-path provisioner): three busybox httpd pods each write their name into their own claim once and serve it;
a client pod reads each by its DNS name NAME-i.web.default.svc.cluster.local. Deleted pods come back with the same
data under the same names; scaling down and up keeps the claims; a partitioned rolling update replaces only the
ordinals above the partition, and `kubectl rollout undo` brings the old template back. Needs a Docker engine and
the local images (scripts/test provides both); never skipped."""

from __future__ import annotations

from typing import Any

import pytest
from kubectl_helpers import Kubectl
from test_services import Services, poll, services  # noqa: F401 - the fixture

NS = "default"
Obj = dict[str, Any]
SCRIPT = ('[ -f /www/index.html ] || echo "$(hostname) $RANDOM$RANDOM" > /www/index.html; '
          'exec httpd -f -p 8080 -h /www')


def statefulset(replicas: int) -> Obj:
    container = {"name": "httpd", "image": "busybox:latest", "imagePullPolicy": "IfNotPresent",
                 "command": ["sh", "-c", SCRIPT], "ports": [{"name": "http", "containerPort": 8080}],
                 "env": [{"name": "EDITION", "value": "1"}],
                 "readinessProbe": {"httpGet": {"path": "/index.html", "port": 8080}, "periodSeconds": 1},
                 "volumeMounts": [{"name": "www", "mountPath": "/www"}]}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                     "podManagementPolicy": "Parallel",
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [container], "terminationGracePeriodSeconds": 1}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}}}}]}}


async def ready(s: Services, replicas: int, updated: int | None = None, timeout: float = 120) -> Obj:
    async def check() -> Obj | None:
        sts = await s.client.get("statefulsets", "web", NS)
        st = sts.get("status") or {}
        done = st.get("observedGeneration") == sts["metadata"]["generation"] and st.get("replicas") == replicas \
            and st.get("readyReplicas") == replicas and st.get("updatedReplicas") == (replicas if updated is None else updated)
        return sts if done else None
    found: Obj = await poll(check, timeout, f"{replicas} ready replicas")
    return found


async def pages(s: Services, client: str, count: int) -> dict[str, str]:
    """What each pod serves, fetched by its DNS name from the client pod."""
    out = {}
    for i in range(count):
        text = await s.sh(client, f"wget -q -O - http://web-{i}.web.{NS}.svc.cluster.local:8080/index.html")
        out[f"web-{i}"] = text.strip()
    return out


@pytest.mark.timeout(300)
async def test_a_statefulset_keeps_each_pods_data_and_dns_name_across_deletion_scaling_and_rollback(
        services: Services, tmp_path) -> None:  # noqa: F811
    s = services
    await s.client.create("services", {"metadata": {"name": "web"}, "spec": {
        "clusterIP": "None", "selector": {"app": "web"}, "ports": [{"name": "http", "port": 8080}]}}, NS)
    await s.client.create("statefulsets", statefulset(3), NS)
    await ready(s, 3)
    client = await s.run_client()
    first = await poll(lambda: _all_served(s, client, 3), 30, "every pod by its DNS name")
    assert [line.split()[0] for line in first.values()] == ["web-0", "web-1", "web-2"]
    for i in range(3):
        claim = await s.client.get("persistentvolumeclaims", f"www-web-{i}", NS)
        assert claim["status"]["phase"] == "Bound"

    for i in range(3):
        await s.client.delete("pods", f"web-{i}", NS)
    await poll(lambda: _all_replaced(s, first), 120, "the pods replaced")
    await ready(s, 3)
    assert await poll(lambda: _all_served(s, client, 3), 30, "every pod again") == first

    await s.client.patch("statefulsets", "web", {"spec": {"replicas": 1}}, NS)
    await ready(s, 1)
    await s.client.patch("statefulsets", "web", {"spec": {"replicas": 3}}, NS)
    await ready(s, 3)
    assert await poll(lambda: _all_served(s, client, 3), 30, "every pod after scaling") == first

    kubectl = Kubectl(s.cluster, tmp_path / "kubectl")
    await kubectl("patch", "statefulset", "web", "-p",
                  '{"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}')
    await kubectl("set", "env", "statefulset/web", "EDITION=2")
    await poll(lambda: _editions(s, {"web-0": "1", "web-1": "1", "web-2": "2"}), 120, "web-2 alone updated")
    await ready(s, 3, updated=1)
    undo = await kubectl("rollout", "undo", "statefulset/web")
    assert undo.out.strip() == "statefulset.apps/web rolled back"
    await poll(lambda: _editions(s, {"web-0": "1", "web-1": "1", "web-2": "1"}), 120, "web-2 rolled back")
    await ready(s, 3)
    assert await poll(lambda: _all_served(s, client, 3), 30, "every pod after the rollback") == first


async def _all_served(s: Services, client: str, count: int) -> dict[str, str] | None:
    found = await pages(s, client, count)
    return found if all(found.values()) else None


async def _all_replaced(s: Services, before: dict[str, str]) -> bool:
    pods = (await s.client.list("pods", NS, label_selector="app=web"))["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return len(live) == len(before) and all(
        (p.get("status") or {}).get("phase") == "Running" for p in live)


async def _editions(s: Services, want: dict[str, str]) -> bool:
    pods = (await s.client.list("pods", NS, label_selector="app=web"))["items"]
    found = {p["metadata"]["name"]: p["spec"]["containers"][0]["env"][0]["value"] for p in pods
             if not p["metadata"].get("deletionTimestamp")}
    return found == want
