"""The Priority admission plugin through a real API server: priorityClassName -> spec.priority and
spec.preemptionPolicy, the global default class, Kubernetes' Forbidden errors, and the system classes."""

from __future__ import annotations

PODS = "/api/v1/namespaces/default/pods"
CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox"}], **spec}}


def priority_class(name: str, value: int, **fields: object) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **fields}


async def test_a_pod_naming_a_class_gets_its_value_and_preemption_policy(http) -> None:
    assert (await http.post(CLASSES, priority_class("batch", 100, preemptionPolicy="Never")))[0] == 201
    status, created = await http.post(PODS, pod("job", priorityClassName="batch"))
    assert status == 201, created
    spec = created["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == ("batch", 100, "Never")


async def test_a_pod_naming_no_class_gets_priority_zero_until_a_class_is_the_global_default(http) -> None:
    _, plain = await http.post(PODS, pod("plain"))
    assert (plain["spec"]["priority"], plain["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in plain["spec"]
    await http.post(CLASSES, priority_class("everyday", 50, globalDefault=True, preemptionPolicy="Never"))
    _, defaulted = await http.post(PODS, pod("defaulted"))
    spec = defaulted["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == ("everyday", 50, "Never")


async def test_a_default_class_that_stops_being_the_default_or_goes_away_stops_applying_at_once(http) -> None:
    await http.post(CLASSES, priority_class("everyday", 50, globalDefault=True))
    assert (await http.post(PODS, pod("first")))[1]["spec"]["priority"] == 50
    await http.patch(f"{CLASSES}/everyday", {"globalDefault": False})
    assert (await http.post(PODS, pod("second")))[1]["spec"]["priority"] == 0
    await http.patch(f"{CLASSES}/everyday", {"globalDefault": True})
    assert (await http.post(PODS, pod("third")))[1]["spec"]["priority"] == 50
    await http.delete(f"{CLASSES}/everyday")
    assert (await http.post(PODS, pod("fourth")))[1]["spec"]["priority"] == 0


async def test_an_unknown_class_is_forbidden_as_kubernetes_says_it(http) -> None:
    status, body = await http.post(PODS, pod("lost", priorityClassName="missing"))
    assert status == 403
    assert (body["reason"], body["message"]) == (
        "Forbidden", 'pods "lost" is forbidden: no PriorityClass with name missing was found')
    assert body["details"] == {"name": "lost", "kind": "pods"}


async def test_a_pod_may_not_set_a_priority_its_class_does_not_give(http) -> None:
    await http.post(CLASSES, priority_class("high", 1000))
    status, body = await http.post(PODS, pod("sneaky", priorityClassName="high", priority=5))
    assert status == 403
    assert body["message"] == ('pods "sneaky" is forbidden: the integer value of priority (5) must not be provided '
                               'in pod spec; priority admission controller computed 1000 from the given '
                               'PriorityClass name')
    status, body = await http.post(PODS, pod("no-class", priority=7))
    assert status == 403 and "computed 0 from the given PriorityClass name" in body["message"]
    status, body = await http.post(PODS, pod("policy", priorityClassName="high", preemptionPolicy="Never"))
    assert status == 403
    assert body["message"] == ('pods "policy" is forbidden: the string value of PreemptionPolicy (Never) must not '
                               'be provided in pod spec; priority admission controller computed '
                               'PreemptLowerPriority from the given PriorityClass name')
    status, same = await http.post(PODS, pod("honest", priorityClassName="high", priority=1000))
    assert status == 201 and same["spec"]["priority"] == 1000


async def test_only_one_class_may_be_the_global_default(http) -> None:
    assert (await http.post(CLASSES, priority_class("first", 10, globalDefault=True)))[0] == 201
    status, body = await http.post(CLASSES, priority_class("second", 20, globalDefault=True))
    assert status == 403
    assert body["message"] == ('priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first is '
                               'already marked as default. Only one default can exist')
    assert (await http.post(CLASSES, priority_class("second", 20)))[0] == 201
    status, _ = await http.patch(f"{CLASSES}/second", {"globalDefault": True})
    assert status == 403
    status, _ = await http.patch(f"{CLASSES}/first", {"description": "still the default"})
    assert status == 200


async def test_the_system_classes_exist_from_the_start_and_resolve_for_pods(http) -> None:
    status, listing = await http.get(CLASSES)
    assert status == 200
    values = {pc["metadata"]["name"]: (pc["value"], pc["globalDefault"], pc["preemptionPolicy"])
              for pc in listing["items"]}
    assert values == {"system-cluster-critical": (2000000000, False, "PreemptLowerPriority"),
                      "system-node-critical": (2000001000, False, "PreemptLowerPriority")}
    _, critical = await http.post(PODS, pod("dns", priorityClassName="system-cluster-critical"))
    assert critical["spec"]["priority"] == 2000000000


async def test_an_update_keeps_the_priority_resolved_at_create(http) -> None:
    await http.post(CLASSES, priority_class("high", 1000))
    await http.post(PODS, pod("web", priorityClassName="high"))
    status, patched = await http.patch(f"{PODS}/web", {"metadata": {"labels": {"tier": "front"}}})
    assert status == 200
    assert (patched["spec"]["priority"], patched["spec"]["preemptionPolicy"]) == (1000, "PreemptLowerPriority")
