"""The root CA publisher against known caches (sample-controller style): the ConfigMap kube-root-ca.crt made,
left alone, repaired; what makes it look again; and nothing done without a CA or in a namespace that went away."""

from __future__ import annotations

import copy

from minik.api.errors import StatusError
from minik.controllers.rootcacertpublisher import CONFIGMAP, DESCRIPTION, RootCACertPublisher
from minik.testing.controllers import RecordingClient, StaticInformerFactory

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
ANNOTATION = "kubernetes.io/description"


def namespace(name: str, phase: str = "Active") -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "status": {"phase": phase}}


def published(namespace_name: str, data: dict | None = None, annotations: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP, "namespace": namespace_name, "uid": f"uid-{namespace_name}",
                         "resourceVersion": "7",
                         "annotations": {ANNOTATION: DESCRIPTION} if annotations is None else annotations},
            "data": {"ca.crt": CA.decode()} if data is None else data}


class Harness:
    def __init__(self, namespaces: list[dict], configmaps: list[dict], root_ca: bytes | None = CA) -> None:
        self.client = RecordingClient([*namespaces, *configmaps])
        self.factory = StaticInformerFactory(self.client, {"namespaces": namespaces, "configmaps": configmaps})
        self.controller = RootCACertPublisher(self.client, self.factory, root_ca=root_ca)


async def test_a_namespace_without_the_configmap_gets_it_with_the_ca_and_kubernetes_description() -> None:
    h = Harness([namespace("team")], [])
    await h.controller.sync("team")
    (create,) = h.client.writes()
    assert (create.verb, create.resource, create.namespace) == ("create", "configmaps", "team")
    assert create.body == {"metadata": {"name": CONFIGMAP, "annotations": {ANNOTATION: DESCRIPTION}},
                           "data": {"ca.crt": CA.decode()}}


async def test_a_current_configmap_is_left_alone_and_extra_annotations_do_not_matter() -> None:
    h = Harness([namespace("team")], [published("team", annotations={ANNOTATION: "mine", "owner": "me"})])
    await h.controller.sync("team")
    assert h.client.writes() == []


async def test_changed_data_or_a_lost_description_is_put_back_keeping_everything_else() -> None:
    changed = published("team", data={"ca.crt": "forged", "extra": "x"}, annotations={"owner": "me"})
    h = Harness([namespace("team")], [changed])
    await h.controller.sync("team")
    (update,) = h.client.writes()
    assert update.verb == "update"
    assert update.body["data"] == {"ca.crt": CA.decode()}
    assert update.body["metadata"]["annotations"] == {"owner": "me", ANNOTATION: DESCRIPTION}
    assert update.body["metadata"]["resourceVersion"] == "7"  # a conflicting write fails and is retried
    assert changed["data"]["ca.crt"] == "forged"  # the cache's copy is never changed


async def test_namespaces_and_changes_to_its_configmap_bring_a_sync() -> None:
    h = Harness([namespace("team")], [published("team")])
    configmaps = h.factory.static("configmaps")
    namespaces = h.factory.static("namespaces")
    namespaces.added(namespace("new"))
    namespaces.updated(namespace("team", phase="Terminating"))  # a terminating namespace gets nothing new
    other = copy.deepcopy(published("team"))
    other["metadata"]["name"] = "something-else"
    configmaps.updated(other)
    assert sorted(await _drain(h)) == ["new"]
    edited = published("team", data={"ca.crt": "x"})
    configmaps.updated(edited)
    configmaps.deleted(edited)
    assert sorted(await _drain(h)) == ["team"]


async def test_without_a_ca_nothing_is_published() -> None:
    h = Harness([namespace("team")], [], root_ca=None)
    await h.controller.sync("team")
    assert h.client.writes() == []


async def test_a_namespace_that_is_gone_or_terminating_is_not_retried() -> None:
    for error in (StatusError(404, "NotFound", 'namespaces "team" not found'),
                  StatusError(403, "Forbidden", "unable to create new content in namespace team because it is being "
                              "terminated", {"causes": [{"reason": "NamespaceTerminating"}]})):
        h = Harness([namespace("team")], [])
        h.client.fail("create", "configmaps", error)
        await h.controller.sync("team")  # no exception: the worker does not retry
    h = Harness([namespace("team")], [])
    h.client.fail("create", "configmaps", StatusError(403, "Forbidden", "denied"))
    try:
        await h.controller.sync("team")
    except StatusError as exc:
        assert exc.message == "denied"
    else:
        raise AssertionError("any other failure is retried")


async def _drain(h: Harness) -> list[str]:
    """The keys queued, taken as the workers would take them."""
    keys = []
    while len(h.controller.queue):
        key = await h.controller.queue.get()
        h.controller.queue.done(key)
        keys.append(key)
    return keys
