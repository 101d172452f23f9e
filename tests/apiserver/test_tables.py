"""Server-side printing: meta.k8s.io/v1 Tables for get, list and watch, and the cells Kubernetes' printers compute."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from minik.api.resources import REGISTRY
from minik.apiserver import printers, tables
from minik.apiserver.negotiation import Conversion, negotiate

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
PODS = "/api/v1/namespaces/default/pods"
NOW = 1_700_000_000.0


def ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cells(kind: str, obj: dict[str, Any]) -> list[Any]:
    return printers.printer_for(kind).cells(obj, NOW)[0]


def pod(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p", "creationTimestamp": ago(300)},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], **spec}, "status": status or {}}


def running(name: str, ready: bool = True, restarts: int = 0, finished: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"name": name, "ready": ready, "restartCount": restarts,
                              "state": {"running": {"startedAt": ago(100)}}}
    if finished:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": finished}}
    return status


async def get_table(http, path: str, accept: str = KUBECTL_ACCEPT, **params: str) -> tuple[int, dict[str, Any]]:
    async with http.session.get(path, headers={"Accept": accept}, params=params or None) as response:
        return response.status, orjson.loads(await response.read())


# -- durations and cells ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (5, "5s"), (119, "119s"), (120, "2m"), (182, "3m2s"), (600, "10m"), (179 * 60, "179m"),
    (3 * 3600, "3h"), (4 * 3600 + 30 * 60, "4h30m"), (20 * 3600, "20h"), (51 * 3600, "2d3h"), (7 * 86400, "7d"),
    (45 * 86400, "45d"), (800 * 86400, "2y70d"), (3000 * 86400, "8y"), (-1, "0s"), (-5, "<invalid>"),
])
def test_ages_are_kubernetes_human_durations(seconds: float, text: str) -> None:
    assert printers.human_duration(seconds) == text


def test_a_pending_pod_without_statuses() -> None:
    assert cells("Pod", pod({"phase": "Pending"})) == ["p", "0/2", "Pending", "0", "5m", "<none>", "<none>",
                                                       "<none>", "<none>"]


def test_a_running_pod_counts_ready_containers_and_recent_restarts() -> None:
    status = {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}], "containerStatuses": [
        running("a", restarts=2, finished=ago(125)), running("b", ready=False)]}
    row = cells("Pod", pod(status, nodeName="n1"))
    assert row[:6] == ["p", "1/2", "Running", "2 (2m5s ago)", "5m", "10.0.0.5"] and row[6] == "n1"


def test_a_waiting_or_terminated_container_reason_is_the_status() -> None:
    waiting = {"name": "a", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}
    assert cells("Pod", pod({"phase": "Pending", "containerStatuses": [waiting]}))[2] == "ImagePullBackOff"
    done = {"name": "a", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    row, conditions = printers.printer_for("Pod").cells(pod({"phase": "Succeeded", "containerStatuses": [done]}), NOW)
    assert row[2] == "Completed" and conditions[0]["type"] == "Completed"
    killed = {"name": "a", "ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 137, "signal": 9}}}
    assert cells("Pod", pod({"phase": "Failed", "containerStatuses": [killed]}))[2] == "Signal:9"


def test_init_containers_show_progress_and_failures() -> None:
    spec = {"initContainers": [{"name": "i1"}, {"name": "i2"}]}
    first_done = {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}
    second_running = {"name": "i2", "restartCount": 0, "state": {"running": {}}}
    status = {"phase": "Pending", "initContainerStatuses": [first_done, second_running]}
    assert cells("Pod", pod(status, **spec))[2] == "Init:1/2"
    crashing = {"name": "i1", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    assert cells("Pod", pod({"phase": "Pending", "initContainerStatuses": [crashing]}, **spec))[2:4] == \
        ["Init:CrashLoopBackOff", "3"]
    failed = {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 2}}}
    assert cells("Pod", pod({"phase": "Failed", "initContainerStatuses": [failed]}, **spec))[2] == "Init:ExitCode:2"


def test_a_sidecar_counts_as_a_container() -> None:
    spec = {"initContainers": [{"name": "side", "restartPolicy": "Always"}]}
    side = {"name": "side", "ready": True, "started": True, "restartCount": 0, "state": {"running": {}}}
    status = {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
              "initContainerStatuses": [side], "containerStatuses": [running("a"), running("b")]}
    assert cells("Pod", pod(status, **spec))[1:3] == ["3/3", "Running"]


def test_a_pod_being_deleted_is_terminating_and_gates_are_counted() -> None:
    p = pod({"phase": "Running", "conditions": [{"type": "www.example.com/gate", "status": "True"}]},
            readinessGates=[{"conditionType": "www.example.com/gate"}, {"conditionType": "other"}])
    p["metadata"]["deletionTimestamp"] = ago(0)
    row = cells("Pod", p)
    assert row[2] == "Terminating" and row[8] == "1/2"


def test_workload_service_and_node_cells() -> None:
    deploy = {"metadata": {"name": "d", "creationTimestamp": ago(7200)},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}, "matchExpressions": [
                  {"key": "tier", "operator": "In", "values": ["b", "a"]}, {"key": "x", "operator": "DoesNotExist"}]},
                       "template": {"spec": {"containers": [{"name": "c", "image": "nginx"},
                                                            {"name": "s", "image": "busybox"}]}}},
              "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert cells("Deployment", deploy) == ["d", "2/3", 3, 2, "120m", "c,s", "nginx,busybox",
                                           "app=d,tier in (a,b),!x"]
    svc = {"metadata": {"name": "s"}, "spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
                                                "clusterIPs": ["10.96.0.10"], "selector": {"b": "2", "a": "1"},
                                                "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080},
                                                          {"port": 53, "protocol": "UDP"}]}}
    assert cells("Service", svc) == ["s", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "<unknown>",
                                     "a=1,b=2"]
    lb = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": []}, "status": {}}
    assert cells("Service", lb)[2:5] == ["<none>", "<pending>", "<none>"]
    node = {"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": "",
                                                   "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "False"}],
                       "addresses": [{"type": "InternalIP", "address": "192.168.1.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Linux"}}}
    assert cells("Node", node) == ["n1", "NotReady,SchedulingDisabled", "control-plane,worker", "<unknown>",
                                   "v1.32.0", "192.168.1.2", "<none>", "Linux", "<unknown>", "<unknown>"]


def test_job_event_and_endpoint_cells() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"completions": 3, "template": {"spec": {"containers": []}}},
           "status": {"succeeded": 3, "startTime": ago(100), "completionTime": ago(40),
                      "conditions": [{"type": "Complete", "status": "True"}]}}
    assert cells("Job", job)[:4] == ["j", "Complete", "3/3", "60s"]
    parallel = {"metadata": {"name": "j"}, "spec": {"parallelism": 2}, "status": {"startTime": ago(10)}}
    assert cells("Job", parallel)[1:4] == ["Running", "0/1 of 2", "10s"]
    event = {"metadata": {"name": "e1"}, "type": "Warning", "reason": "BackOff", "message": " restarting \n",
             "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{c}"},
             "source": {"component": "kubelet", "host": "n1"}, "firstTimestamp": ago(600),
             "lastTimestamp": ago(30), "count": 7}
    assert cells("Event", event) == ["30s", "Warning", "BackOff", "pod/web", "spec.containers{c}", "kubelet, n1",
                                     "restarting", "10m", 7, "e1"]
    endpoints = {"metadata": {"name": "s"}, "subsets": [{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(5)],
                                                         "ports": [{"port": 80}]}]}
    assert cells("Endpoints", endpoints)[1] == "10.0.0.0:80,10.0.0.1:80,10.0.0.2:80 + 2 more..."


def test_every_registered_kind_has_its_kubernetes_columns() -> None:
    headers = {t.kind: [c["name"] for c in printers.printer_for(t.kind).columns() if c["priority"] == 0]
               for t in REGISTRY.types}
    assert headers["Pod"] == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert headers["Job"] == ["Name", "Status", "Completions", "Duration", "Age"]
    assert headers["PriorityClass"] == ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
    assert headers["Event"] == ["Last Seen", "Type", "Reason", "Object", "Message"]
    assert headers["ClusterRole"] == headers["Role"] == ["Name", "Created At"]
    assert headers["ClusterRoleBinding"] == headers["RoleBinding"] == ["Name", "Role", "Age"]
    for t in REGISTRY.types:
        if "list" not in t.verbs:
            continue  # the reviews are never listed or printed
        printer = printers.printer_for(t.kind)
        assert printer is not printers.printer_for("NoSuchKind"), t.kind
        obj = {"kind": t.kind, "metadata": {"name": "x", "creationTimestamp": ago(1)}}
        assert len(printer.cells(obj, NOW)[0]) == len(printer.columns()), t.kind  # empty objects print too


def test_accept_negotiation_picks_the_first_servable_type() -> None:
    assert negotiate(KUBECTL_ACCEPT) == Conversion("Table", "v1")
    assert negotiate("application/json;as=Table;v=v1beta1;g=meta.k8s.io") == Conversion("Table", "v1beta1")
    assert negotiate("application/json, */*") is None
    assert negotiate("application/json;as=Table;v=v2;g=meta.k8s.io,application/json") is None
    assert negotiate("application/vnd.kubernetes.protobuf,application/json") is None
    assert negotiate(None) is None


# -- over HTTP ----------------------------------------------------------------------------------------------
async def test_a_list_is_a_table_with_list_metadata_and_partial_objects(http) -> None:
    for name in ("a", "b", "c"):
        await http.post(PODS, {"metadata": {"name": name, "labels": {"app": name}},
                               "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    status, table = await get_table(http, PODS, limit="2")
    assert status == 200 and (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]][:5] == \
        [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0)]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert [row["cells"][:4] for row in table["rows"]] == [["a", "0/1", "Pending", "0"], ["b", "0/1", "Pending", "0"]]
    assert table["metadata"]["continue"] and int(table["metadata"]["resourceVersion"]) > 0
    row_object = table["rows"][0]["object"]
    assert row_object["kind"] == "PartialObjectMetadata" and row_object["apiVersion"] == "meta.k8s.io/v1"
    assert row_object["metadata"]["labels"] == {"app": "a"} and "spec" not in row_object
    status, rest = await get_table(http, PODS, limit="2", **{"continue": table["metadata"]["continue"]})
    assert [row["cells"][0] for row in rest["rows"]] == ["c"] and "continue" not in rest["metadata"]


async def test_include_object_and_a_single_get(http) -> None:
    await http.post(PODS, {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    _, full = await get_table(http, PODS, includeObject="Object")
    assert full["rows"][0]["object"]["kind"] == "Pod" and full["rows"][0]["object"]["spec"]["containers"]
    _, bare = await get_table(http, PODS, includeObject="None")
    assert "object" not in bare["rows"][0]
    status, one = await get_table(http, f"{PODS}/web")
    assert status == 200 and len(one["rows"]) == 1 and one["rows"][0]["cells"][0] == "web"
    assert one["metadata"]["resourceVersion"] == one["rows"][0]["object"]["metadata"]["resourceVersion"]
    status, body = await get_table(http, PODS, includeObject="Everything")
    assert status == 400 and body["reason"] == "BadRequest"
    status, plain = await get_table(http, PODS, accept="application/json")
    assert plain["kind"] == "PodList"
    _, beta = await get_table(http, PODS, accept="application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"


async def test_cluster_scoped_kinds_and_kinds_of_other_groups(http) -> None:
    _, namespaces = await get_table(http, "/api/v1/namespaces")
    assert [c["name"] for c in namespaces["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert ["default", "Active"] in [row["cells"][:2] for row in namespaces["rows"]]
    await http.post("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    _, classes = await get_table(http, "/apis/scheduling.k8s.io/v1/priorityclasses")
    assert classes["rows"][0]["cells"][:3] == ["high", 1000, False]


async def test_watch_events_carry_one_row_tables_and_columns_only_first(http) -> None:
    await http.post(PODS, {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    await http.post(PODS, {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    events = []
    async with http.session.get(PODS, params={"watch": "true", "timeoutSeconds": "1"},
                                headers={"Accept": KUBECTL_ACCEPT}) as response:
        async for line in response.content:
            events.append(orjson.loads(line))
            if len(events) == 2:
                await http.delete(f"{PODS}/a", gracePeriodSeconds="0")
            if len(events) == 3:
                break
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "DELETED"]
    assert all(e["object"]["kind"] == "Table" and len(e["object"]["rows"]) == 1 for e in events)
    assert len(events[0]["object"]["columnDefinitions"]) == 9
    assert events[1]["object"]["columnDefinitions"] == [] and events[2]["object"]["columnDefinitions"] == []
    assert [e["object"]["rows"][0]["cells"][0] for e in events] == ["a", "b", "a"]
    assert events[2]["object"]["metadata"]["resourceVersion"] == \
        events[2]["object"]["rows"][0]["object"]["metadata"]["resourceVersion"]


async def test_watch_errors_stay_statuses_and_bookmarks_become_empty_tables() -> None:
    error = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410}
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "12"}}

    async def lines():
        yield (orjson.dumps({"type": "BOOKMARK", "object": bookmark}) + b"\n" +
               orjson.dumps({"type": "ERROR", "object": error}) + b"\n")

    writer = tables.TableWriter(REGISTRY.resolve("pods"), "meta.k8s.io/v1", tables.INCLUDE_METADATA)
    events = [orjson.loads(line) for chunk in [c async for c in writer.watch(lines())] for line in chunk.splitlines()]
    assert events[0]["type"] == "BOOKMARK" and events[0]["object"]["kind"] == "Table"
    assert events[0]["object"]["metadata"] == {"resourceVersion": "12"} and events[0]["object"]["rows"] == []
    assert events[1] == {"type": "ERROR", "object": error}
