"""ReplicaSet and Deployment syncs against known caches (sample-controller style)."""

from __future__ import annotations

from objects import meta, pod, template

from minik.controllers.deployment import DeploymentController
from minik.controllers.deploymentutil import TEMPLATE_HASH_LABEL
from minik.controllers.replicaset import ReplicaSetController
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory


def replicaset(replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("web", generation=1),
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": template({"app": "web"})}, "status": {}}


def rs_controller(rs: dict, pods: list[dict]) -> tuple[ReplicaSetController, RecordingClient]:
    client = RecordingClient([rs, *pods])
    factory = StaticInformerFactory(client, {"replicasets": [rs], "pods": pods})
    return ReplicaSetController(client, factory, clock=FakeClock()), client


async def test_a_replicaset_creates_the_missing_pods_owned_by_it() -> None:
    rs = replicaset(3)
    controller, client = rs_controller(rs, [pod("web-a", labels={"app": "web"}, owner=rs)])
    await controller.sync("default/web")
    created = [a.body for a in client.writes("create", "pods")]
    assert len(created) == 2
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"] for p in created)
    assert client.stored("replicasets", "web", "default")["status"]["replicas"] == 1  # type: ignore[index]


async def test_a_replicaset_deletes_the_least_valuable_pods_first() -> None:
    rs = replicaset(1)
    pods = [pod("running", labels={"app": "web"}, owner=rs, node_name="n1", phase="Running", ready=True),
            pod("pending", labels={"app": "web"}, owner=rs, node_name="n1", phase="Pending"),
            pod("unscheduled", labels={"app": "web"}, owner=rs)]
    controller, client = rs_controller(rs, pods)
    await controller.sync("default/web")
    assert sorted(a.name for a in client.writes("delete", "pods")) == ["pending", "unscheduled"]


async def test_a_matching_orphan_is_adopted_instead_of_creating_a_pod() -> None:
    rs = replicaset(1)
    controller, client = rs_controller(rs, [pod("stray", labels={"app": "web"})])
    await controller.sync("default/web")
    [patch] = client.writes("patch", "pods")
    assert patch.name == "stray" and patch.body[-1]["value"][0]["uid"] == rs["metadata"]["uid"]
    assert not client.writes("create", "pods")


async def test_a_new_deployment_gets_one_replicaset_named_and_labelled_with_its_template_hash() -> None:
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web", generation=1),
         "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template({"app": "web"}),
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                  "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}, "status": {}}
    client = RecordingClient([d])
    factory = StaticInformerFactory(client, {"deployments": [d], "replicasets": [], "pods": []})
    await DeploymentController(client, factory, clock=FakeClock()).sync("default/web")
    [create] = client.writes("create", "replicasets")
    rs = create.body
    hash_ = rs["metadata"]["labels"][TEMPLATE_HASH_LABEL]
    assert rs["metadata"]["name"] == f"web-{hash_}" and rs["spec"]["replicas"] == 3
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", TEMPLATE_HASH_LABEL: hash_}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
