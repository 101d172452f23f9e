"""`minik describe`: kubectl's layout, the main fields by kind, and the object's events at the end."""

from __future__ import annotations

from cli_helpers import Invoke

from minik.client import Client

POD = {"metadata": {"name": "web", "labels": {"app": "web", "tier": "front"},
                    "annotations": {"note": "hello"}},
       "spec": {"containers": [{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}],
                                "env": [{"name": "MODE", "value": "fast"}]}]}}


def event(name: str, pod: dict, reason: str, message: str, **extra: object) -> dict:
    meta = pod["metadata"]
    return {"metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                               "uid": meta["uid"]},
            "reason": reason, "message": message, "type": "Normal", "source": {"component": "default-scheduler"},
            "firstTimestamp": meta["creationTimestamp"], "lastTimestamp": meta["creationTimestamp"], **extra}


async def test_describe_pod_shows_its_fields_and_its_events(minik: Invoke, client: Client) -> None:
    pod = await client.create("pods", POD, "default")
    await client.create("events", event("web.1", pod, "Scheduled", "Successfully assigned default/web to n1"),
                        "default")
    await client.create("events", event("web.2", pod, "Pulling", "Pulling image", count=3), "default")
    other = {**pod, "metadata": {**pod["metadata"], "uid": "another-uid"}}
    await client.create("events", event("old.1", other, "Killing", "a previous pod of the same name"), "default")

    result = await minik("describe", "pod", "web")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == ["Name:             web", "Namespace:        default", "Priority:         0"]
    assert "Labels:           app=web" in lines and "                  tier=front" in lines
    assert "Annotations:      note: hello" in lines
    assert "Status:           Pending" in lines
    assert "Containers:" in lines and "  c:" in lines
    assert any(line.split() == ["Image:", "nginx:1"] for line in lines)
    assert any(line.split() == ["Port:", "80/TCP"] for line in lines)
    assert any(line.split() == ["MODE:", "fast"] for line in lines)
    events = lines[lines.index("Events:"):]
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert events[2].split() == ["----", "------", "----", "----", "-------"]
    assert [e.split()[:2] for e in events[3:]] == [["Normal", "Scheduled"], ["Normal", "Pulling"]]
    assert "(x3 over" in events[4] and events[4].rstrip().endswith("default-scheduler  Pulling image")
    assert "previous pod" not in result.stdout  # same name, other uid: not this pod's event


async def test_describe_without_events_says_none(minik: Invoke, client: Client) -> None:
    await client.create("configmaps", {"metadata": {"name": "cfg"}, "data": {"mode": "fast"}}, "default")
    result = await minik("describe", "cm/cfg")
    lines = result.stdout.splitlines()
    assert lines[:4] == ["Name:         cfg", "Namespace:    default", "Labels:       <none>",
                         "Annotations:  <none>"]
    assert lines[lines.index("Data"):lines.index("Data") + 5] == ["Data", "====", "mode:", "----", "fast"]
    assert lines[-1].split() == ["Events:", "<none>"]


async def test_describe_deployment_and_generic_kinds(minik: Invoke, client: Client) -> None:
    await client.create("deployments", {
        "metadata": {"name": "api"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                                              "template": {"metadata": {"labels": {"app": "api"}}, "spec": {
                                                  "containers": [{"name": "c", "image": "api:1"}]}}}},
        "default")
    lines = (await minik("describe", "deployments.apps", "api")).stdout.splitlines()
    assert any(line.split() == ["Selector:", "app=api"] for line in lines)
    assert any(line.startswith("Replicas:") and line.endswith("2 desired | 0 updated | 0 total | 0 available | "
                                                              "0 unavailable") for line in lines)
    assert "Pod Template:" in lines and "   c:" in lines

    await client.create("leases", {"metadata": {"name": "lock"}, "spec": {"holderIdentity": "me",
                                                                          "leaseDurationSeconds": 15}}, "default")
    lease = (await minik("describe", "lease", "lock")).stdout.splitlines()
    assert lease[0].split() == ["Name:", "lock"]
    assert "Spec:" in lease
    assert any(line.split() == ["Holder", "Identity:", "me"] for line in lease)
    assert any(line.split() == ["Lease", "Duration", "Seconds:", "15"] for line in lease)


async def test_describe_a_missing_object_is_an_error(minik: Invoke) -> None:
    result = await minik("describe", "svc", "nope")
    assert result.exit_code == 1
    assert result.stderr.strip() == 'Error from server (NotFound): services "nope" not found'
