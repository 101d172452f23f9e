"""APIServices through a real API server: one local APIService per served group-version, with Kubernetes' names,
priorities and status, kept in step with the registry; and the validation of the ones people write."""

from __future__ import annotations

from minik.api.registry import Registry, ResourceType
from minik.api.resources import REGISTRY
from minik.apiserver.apiservices import AUTOMANAGED, LocalAPIServices
from minik.apiserver.server import SYSTEM_USER
from tests.crds import CRDS, GROUP, create_and_wait, wait_for, widget_crd

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"


def remote(name: str, group: str, version: str, **spec: object) -> dict:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 100, "versionPriority": 10,
                     "service": {"namespace": "metrics", "name": "metrics-server"}, **spec}}


async def test_every_served_group_version_is_a_local_apiservice(http) -> None:
    status, listed = await http.get(APISERVICES)
    assert status == 200
    names = {item["metadata"]["name"] for item in listed["items"]}
    served = {f"{t.version}.{t.group}" for t in REGISTRY.types}
    assert names == served and {"v1.", "v1.apps", "v1.events.k8s.io", "v1.apiregistration.k8s.io"} <= names
    status, core = await http.get(f"{APISERVICES}/v1.")
    assert core["spec"] == {"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert core["metadata"]["labels"] == {AUTOMANAGED: "onstart"}
    [condition] = core["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "Available", "True", "Local", "Local APIServices are always available")
    _, apps = await http.get(f"{APISERVICES}/v1.apps")
    assert (apps["spec"]["groupPriorityMinimum"], apps["spec"]["versionPriority"]) == (17800, 15)


async def test_a_registry_change_updates_the_local_apiservices(cluster) -> None:
    """What the CustomResourceDefinitions do: the registry gains or loses a group, then sync() runs."""
    assert cluster.api is not None
    rest = cluster.api.rest(REGISTRY.get("apiregistration.k8s.io", "v1", "apiservices"))
    extra = ResourceType("example.com", "v1alpha1", "Widget", "widgets", "widget", True,
                         REGISTRY.get("", "v1", "configmaps").strategy)
    grown = LocalAPIServices(rest, Registry([*REGISTRY.types, extra]), SYSTEM_USER)
    await grown.sync()
    record = cluster.store.get(rest.resource.key(None, "v1alpha1.example.com"))
    assert record is not None and record.object()["spec"]["groupPriorityMinimum"] == 1000
    await rest.create(remote("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1"), None, SYSTEM_USER)
    without_events = Registry([t for t in REGISTRY.types if t.group != "events.k8s.io"])
    await LocalAPIServices(rest, without_events, SYSTEM_USER).sync()
    assert cluster.store.get(rest.resource.key(None, "v1beta1.metrics.k8s.io")) is not None  # not automanaged
    assert cluster.store.get(rest.resource.key(None, "v1alpha1.example.com")) is None
    assert cluster.store.get(rest.resource.key(None, "v1.events.k8s.io")) is None
    assert cluster.store.get(rest.resource.key(None, "v1.apps")) is not None


async def test_apiservices_people_write_are_validated_and_kept(http) -> None:
    status, created = await http.post(APISERVICES, remote("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1"))
    assert status == 201, created
    assert created["spec"]["service"]["port"] == 443 and "status" not in created
    status, body = await http.post(APISERVICES, remote("wrong", "metrics.k8s.io", "v1", groupPriorityMinimum=0,
                                                       versionPriority=5000))
    assert status == 422, body
    causes = {(c["field"], c["message"]) for c in body["details"]["causes"]}
    assert ("metadata.name", 'Invalid value: "wrong": must be `spec.version+"."+spec.group`: '
                             '"v1.metrics.k8s.io"') in causes
    assert ("spec.groupPriorityMinimum", "Invalid value: 0: must be positive and less than 20000") in causes
    assert ("spec.versionPriority", "Invalid value: 5000: must be positive and less than 1000") in causes
    status, body = await http.post(APISERVICES, {**remote("v2.example.com", "example.com", "v2"), "spec": {
        "group": "example.com", "version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1,
        "insecureSkipTLSVerify": True}})
    assert status == 422 and body["details"]["causes"][0]["message"] == (
        "Invalid value: true: local APIServices may not have insecureSkipTLSVerify")



async def test_a_crd_brings_its_group_versions_apiservice_and_takes_it_away_when_deleted(http) -> None:
    crd = widget_crd()
    await create_and_wait(http, crd)

    async def apiservice(expected: int) -> bool:
        status, _ = await http.get(f"{APISERVICES}/v1.{GROUP}")
        return status == expected

    await wait_for(lambda: apiservice(200))
    _, local = await http.get(f"{APISERVICES}/v1.{GROUP}")
    assert local["spec"]["group"] == GROUP and "service" not in local["spec"]
    status, _ = await http.delete(f"{CRDS}/{crd['metadata']['name']}")
    assert status == 200
    await wait_for(lambda: apiservice(404))
