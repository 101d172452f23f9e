"""Real kubectl (the binary matching the server's /version, 1.32) against a real minik API server: what it prints
for get, api-resources, explain, and what create does with its default (strict) field validation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import yaml

from minik.testing.namespaces import default_service_account, service_accounts_path

PODS = "/api/v1/namespaces/default/pods"




async def make_pod(http, name: str, labels: dict[str, str] | None = None, namespace: str = "default") -> None:
    status, body = await http.post(f"/api/v1/namespaces/{namespace}/pods", {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert status == 201, body


async def test_get_pods_prints_the_kubernetes_columns(http, kubectl) -> None:
    await make_pod(http, "web", {"app": "web"})
    await make_pod(http, "db", {"app": "db"})
    await http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await http.post(service_accounts_path("other"), default_service_account())  # no controller makes it here
    await make_pod(http, "tool", namespace="other")

    result = await kubectl("get", "pods")
    assert result.rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [row[:4] for row in result.rows[1:]] == [["db", "0/1", "Pending", "0"], ["web", "0/1", "Pending", "0"]]
    assert all(row[4].endswith("s") for row in result.rows[1:])

    wide = await kubectl("get", "pods", "-o", "wide")
    assert wide.rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
                            "READINESS GATES"]
    assert wide.rows[1][5:] == ["<none>", "<none>", "<none>", "<none>"]

    everywhere = await kubectl("get", "pods", "-A")
    assert everywhere.rows[0][:2] == ["NAMESPACE", "NAME"]
    assert [row[:2] for row in everywhere.rows[1:]] == [["default", "db"], ["default", "web"], ["other", "tool"]]

    labelled = await kubectl("get", "pods", "--show-labels", "-l", "app=web")
    assert labelled.rows[0][-1] == "LABELS" and [(r[0], r[-1]) for r in labelled.rows[1:]] == [("web", "app=web")]

    one = await kubectl("get", "pod", "web")
    assert [row[0] for row in one.rows] == ["NAME", "web"]


async def test_get_in_machine_formats(http, kubectl) -> None:
    await make_pod(http, "web", {"app": "web"})
    as_yaml = yaml.safe_load((await kubectl("get", "pod", "web", "-o", "yaml")).out)
    assert (as_yaml["kind"], as_yaml["metadata"]["name"]) == ("Pod", "web")
    as_json = orjson.loads((await kubectl("get", "pods", "-o", "json")).out)
    assert as_json["kind"] == "List" and [i["metadata"]["name"] for i in as_json["items"]] == ["web"]
    assert (await kubectl("get", "pods", "-o", "name")).out.split() == ["pod/web"]
    sorted_out = await kubectl("get", "pods", "--sort-by=.metadata.name", "-o",
                               "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image")
    assert sorted_out.rows == [["NAME", "IMAGE"], ["web", "busybox"]]


async def test_get_all_and_other_kinds(http, kubectl) -> None:
    await make_pod(http, "web", {"app": "web"})
    await http.post("/api/v1/namespaces/default/services", {
        "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    await http.post("/apis/apps/v1/namespaces/default/deployments", {
        "metadata": {"name": "d"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    await http.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}, "data": {"a": "1"}})

    everything = await kubectl("get", "all")
    names = [row[0] for row in everything.rows]
    assert "pod/web" in names and "service/web" in names and "deployment.apps/d" in names
    assert ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"] in everything.rows
    assert ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"] in everything.rows

    deployments = await kubectl("get", "deploy", "-o", "wide")
    assert deployments.rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES",
                                   "SELECTOR"]
    assert deployments.rows[1][:4] == ["d", "0/2", "0", "0"] and deployments.rows[1][5:] == ["c", "nginx", "app=d"]
    configmaps = await kubectl("get", "cm")
    assert configmaps.rows[0] == ["NAME", "DATA", "AGE"] and configmaps.rows[1][:2] == ["cm", "1"]
    namespaces = await kubectl("get", "ns")
    assert ["default", "Active"] in [row[:2] for row in namespaces.rows]


async def test_api_resources_lists_what_is_served(kubectl) -> None:
    result = await kubectl("api-resources")
    assert result.rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert ["pods", "po", "v1", "true", "Pod"] in result.rows
    assert ["deployments", "deploy", "apps/v1", "true", "Deployment"] in result.rows
    assert ["leases", "coordination.k8s.io/v1", "true", "Lease"] in result.rows  # no short name
    wide = await kubectl("api-resources", "-o", "wide")
    assert wide.rows[0][-2:] == ["VERBS", "CATEGORIES"]
    pods = next(row for row in wide.rows if row[0] == "pods")
    assert pods[-2:] == ["create,delete,deletecollection,get,list,patch,update,watch", "all"]
    discovery = orjson.loads((await kubectl("get", "--raw", "/api/v1")).out)
    subresources = {r["name"] for r in discovery["resources"] if "/" in r["name"]}
    assert {"pods/status", "pods/binding", "pods/eviction", "namespaces/finalize", "replicationcontrollers/scale",
            "pods/log", "pods/exec"} <= subresources


async def test_create_validates_fields_on_the_server(http, kubectl, tmp_path: Path) -> None:
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(manifest))
    created = await kubectl("create", "-f", str(good))
    assert created.out.strip() == "pod/web created"

    manifest["metadata"]["name"] = "typo"
    manifest["spec"]["containers"][0]["imagee"] = "nginx"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(manifest))
    refused = await kubectl("create", "-f", str(bad), ok=False)
    assert refused.code == 1
    assert ('Error from server (BadRequest): error when creating "' + str(bad) + '": Pod in version "v1" cannot be '
            'handled as a Pod: strict decoding error: unknown field "spec.containers[0].imagee"') in refused.err
    status, _ = await http.get(f"{PODS}/typo")
    assert status == 404

    warned = await kubectl("create", "-f", str(bad), "--validate=warn")
    assert 'Warning: unknown field "spec.containers[0].imagee"' in warned.err
    status, stored = await http.get(f"{PODS}/typo")
    assert status == 200 and "imagee" not in stored["spec"]["containers"][0]


async def test_explain_walks_the_openapi_schemas(kubectl) -> None:
    result = await kubectl("explain", "pods.spec.containers")
    assert "KIND:       Pod" in result.out and "FIELD: containers <[]Container>" in result.out
    assert "  image\t<string>" in result.out and "  ports\t<[]ContainerPort>" in result.out
    deployment = await kubectl("explain", "deployment.spec.replicas")
    assert "GROUP:      apps" in deployment.out and "FIELD: replicas <integer>" in deployment.out
    limits = await kubectl("explain", "pods.spec.containers.resources.limits")
    assert "FIELD: limits <map[string]Quantity>" in limits.out, limits.out


async def test_get_watch_prints_rows_as_objects_change(http, kubectl) -> None:
    await make_pod(http, "first")
    process = await asyncio.create_subprocess_exec(*kubectl.command("get", "pods", "-w"), env=kubectl.env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    try:
        async def line() -> list[str]:
            raw = await asyncio.wait_for(process.stdout.readline(), timeout=30)
            return raw.decode().split()

        assert await line() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert (await line())[:3] == ["first", "0/1", "Pending"]
        await make_pod(http, "second")
        assert (await line())[:3] == ["second", "0/1", "Pending"]
    finally:
        process.kill()
        await process.wait()


async def test_describe_shows_the_object_and_its_events(http, kubectl) -> None:
    await make_pod(http, "web", {"app": "web"})
    _, pod = await http.get(f"{PODS}/web")
    status, _ = await http.post("/api/v1/namespaces/default/events", {
        "metadata": {"name": "web.1"}, "type": "Normal", "reason": "Scheduled",
        "message": "Successfully assigned default/web to node-1", "count": 1,
        "firstTimestamp": pod["metadata"]["creationTimestamp"], "lastTimestamp": pod["metadata"]["creationTimestamp"],
        "source": {"component": "default-scheduler"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": pod["metadata"]["uid"],
                           "apiVersion": "v1"}})
    assert status == 201
    result = await kubectl("describe", "pod", "web")
    lines = result.out.splitlines()
    assert lines[0].split() == ["Name:", "web"]
    assert any(line.split() == ["Namespace:", "default"] for line in lines)
    assert any(line.split()[:2] == ["Labels:", "app=web"] for line in lines)
    assert any(line.split() == ["Image:", "busybox"] for line in lines)
    events = lines[lines.index(next(line for line in lines if line.startswith("Events:"))):]
    assert any("Scheduled" in line and "default-scheduler" in line and
               "Successfully assigned default/web to node-1" in line for line in events), events
