"""StatefulSet syncs against known caches (sample-controller style): the claims volumeClaimTemplates make and
their owners under the retention policy, what a stale claim holds back, and revisions."""

from __future__ import annotations

from typing import Any

from objects import T0, meta, pod, ref

from minik.api.errors import StatusError
from minik.api.registry import Registry
from minik.api.resources import REGISTRY
from minik.controllers import statefulsetutil as su
from minik.controllers.statefulset import StatefulSetController
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

Obj = dict[str, Any]

#: the registry with the claims, whether or not this build serves them already
_TYPES = list(REGISTRY.types) + ([su.CLAIMS] if REGISTRY.resolve("persistentvolumeclaims") is None else [])
WITH_CLAIMS = Registry(_TYPES)


def statefulset(name: str, replicas: int, *, retention: Obj | None = None, **spec: Any) -> Obj:
    labels = {"app": name}
    claim = {"metadata": {"name": "data", "labels": {"tier": "db"}},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta(name, generation=1),
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
                     "podManagementPolicy": "OrderedReady",
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                     "persistentVolumeClaimRetentionPolicy": retention or {"whenDeleted": "Retain",
                                                                           "whenScaled": "Retain"},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}],
                                           "volumes": [{"name": "data", "emptyDir": {}},
                                                       {"name": "cache", "emptyDir": {}}]}},
                     "volumeClaimTemplates": [claim], **spec},
            "status": {}}


def revision_of(sts: Obj, number: int = 1) -> Obj:
    revision = su.new_revision(sts, number, 0)
    revision["metadata"].update(uid=f"rev-{number}", resourceVersion="1")
    return revision


def member(sts: Obj, ordinal: int, revision: Obj, **kw: Any) -> Obj:
    name = f"{sts['metadata']['name']}-{ordinal}"
    labels = {"app": sts["metadata"]["name"], **su.identity_labels(name, ordinal),
              su.REVISION_LABEL: revision["metadata"]["name"]}
    return pod(name, labels=labels, owner=sts, **kw)


def claim_of(sts: Obj, ordinal: int, owners: list[Obj] | None = None, **extra: Any) -> Obj:
    name = f"data-{sts['metadata']['name']}-{ordinal}"
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": meta(name, ownerReferences=owners or [], **extra), "spec": {}}


def build(sts: Obj, pods: list[Obj] | None = None, claims: list[Obj] | None = None,
          revisions: list[Obj] | None = None) -> tuple[StatefulSetController, RecordingClient]:
    pods, claims, revisions = pods or [], claims or [], revisions or []
    client = RecordingClient([sts, *pods, *claims, *revisions], registry=WITH_CLAIMS)
    factory = StaticInformerFactory(client, {"statefulsets": [sts], "pods": pods, "controllerrevisions": revisions,
                                             "persistentvolumeclaims": claims})
    return StatefulSetController(client, factory, clock=FakeClock(T0 + 100)), client


async def test_the_first_replica_gets_its_claim_then_its_pod_mounting_it() -> None:
    sts = statefulset("db", 2)
    controller, client = build(sts)
    await controller.sync("default/db")
    [claim] = [a.body for a in client.writes("create", "persistentvolumeclaims")]
    assert claim["metadata"]["name"] == "data-db-0"
    assert claim["metadata"]["labels"] == {"tier": "db", "app": "db"}
    assert not claim["metadata"].get("ownerReferences")  # Retain: the claim outlives the set
    [created] = [a.body for a in client.writes("create", "pods")]  # OrderedReady: db-1 waits for db-0
    assert created["metadata"]["name"] == "db-0"
    assert created["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
                                          {"name": "cache", "emptyDir": {}}]
    assert [a.verb for a in client.writes()] == ["create", "create", "create", "update_status"]  # the revision too


async def test_when_deleted_delete_makes_the_set_own_each_new_claim() -> None:
    sts = statefulset("db", 1, retention={"whenDeleted": "Delete", "whenScaled": "Retain"})
    controller, client = build(sts)
    await controller.sync("default/db")
    [claim] = [a.body for a in client.writes("create", "persistentvolumeclaims")]
    assert claim["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": sts["metadata"]["uid"]}]


async def test_when_scaled_delete_gives_the_removed_replicas_claim_to_its_pod_before_deleting_it() -> None:
    sts = statefulset("db", 1, retention={"whenDeleted": "Retain", "whenScaled": "Delete"})
    revision = revision_of(sts)
    pods = [member(sts, i, revision, phase="Running", ready=True) for i in range(2)]
    claims = [claim_of(sts, 0), claim_of(sts, 1)]
    controller, client = build(sts, pods, claims, [revision])
    await controller.sync("default/db")
    [update] = client.writes("update", "persistentvolumeclaims")
    assert update.name == "data-db-1"
    assert update.body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "db-1", "uid": pods[1]["metadata"]["uid"]}]
    assert [a.name for a in client.writes("delete", "pods")] == ["db-1"]
    verbs = [(a.verb, a.resource) for a in client.writes()]
    assert verbs.index(("update", "persistentvolumeclaims")) < verbs.index(("delete", "pods"))


async def test_a_claim_still_owned_by_a_previous_pod_holds_the_new_pod_back() -> None:
    sts = statefulset("db", 1, retention={"whenDeleted": "Retain", "whenScaled": "Delete"})
    revision = revision_of(sts)
    stale = claim_of(sts, 0, owners=[{"apiVersion": "v1", "kind": "Pod", "name": "db-0", "uid": "gone"}])
    controller, client = build(sts, [], [stale], [revision])
    await controller.sync("default/db")
    assert not client.writes("create", "pods") and not client.writes("create", "persistentvolumeclaims")


async def test_a_claim_that_cannot_be_made_is_a_failed_create_event_and_no_pod() -> None:
    sts = statefulset("db", 1)
    controller, client = build(sts, [], [], [revision_of(sts)])
    events: list[tuple[str, str, str]] = []

    class Recorder:
        def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
            events.append((type_, reason, message))
    controller.recorder = Recorder()
    client.fail("create", "persistentvolumeclaims",
                StatusError(404, "NotFound", "the server could not find the requested resource"))
    try:
        await controller.sync("default/db")
    except StatusError as exc:
        assert exc.code == 404
    else:
        raise AssertionError("the sync should fail, to be retried")
    assert not client.writes("create", "pods")
    assert events == [("Warning", "FailedCreate", "create Claim data-db-0 for Pod db-0 in StatefulSet db failed "
                                                  "error: the server could not find the requested resource")]


async def test_a_set_without_templates_never_asks_for_claims() -> None:
    sts = statefulset("web", 1)
    del sts["spec"]["volumeClaimTemplates"]
    controller, client = build(sts)
    client.fail("get", "persistentvolumeclaims", StatusError(404, "NotFound", "not served"))
    await controller.sync("default/web")
    assert [a.name for a in client.writes("create", "pods")] == ["web-0"]
    assert not [a for a in client.actions if a.resource == "persistentvolumeclaims"]


async def test_a_pod_that_lost_its_identity_labels_gets_them_back() -> None:
    sts = statefulset("web", 1)
    del sts["spec"]["volumeClaimTemplates"]
    revision = revision_of(sts)
    stray = member(sts, 0, revision, phase="Running", ready=True)
    del stray["metadata"]["labels"][su.POD_NAME_LABEL]
    controller, client = build(sts, [stray], [], [revision])
    await controller.sync("default/web")
    [patch] = client.writes("patch", "pods")
    assert patch.name == "web-0"
    assert patch.body == {"metadata": {"labels": {su.POD_NAME_LABEL: "web-0", su.POD_INDEX_LABEL: "0"}}}


async def test_a_revision_of_another_template_under_the_same_name_is_a_collision() -> None:
    sts = statefulset("web", 0)
    squatter = revision_of(sts)
    squatter["data"] = {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "other"}]}}}}
    squatter["metadata"]["ownerReferences"] = [ref(sts)]
    client = RecordingClient([sts, squatter], registry=WITH_CLAIMS)
    factory = StaticInformerFactory(client, {"statefulsets": [sts], "controllerrevisions": []})
    controller = StatefulSetController(client, factory, clock=FakeClock(T0 + 100))
    await controller.sync("default/web")
    created = [a.body["metadata"]["name"] for a in client.writes("create", "controllerrevisions")]
    assert created[0] == squatter["metadata"]["name"] and created[1] != created[0]
    status = client.writes("update_status", "statefulsets")[-1].body["status"]
    assert status["collisionCount"] == 1 and status["updateRevision"] == created[1]
