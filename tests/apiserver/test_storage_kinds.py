"""PersistentVolumes, PersistentVolumeClaims and StorageClasses through a real API server: Kubernetes' defaults and
validation, the protection finalizers and the default class given by admission, and the columns kubectl prints."""

from __future__ import annotations

from typing import Any

import orjson

PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def volume(name: str, size: str = "1Gi", **spec: Any) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/tmp/{name}"}, **spec}}


def claim(name: str, size: str = "1Gi", **spec: Any) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def fields(body: dict) -> set[str]:
    return {c["field"] for c in body["details"]["causes"]}


async def table(http: Any, path: str) -> dict:
    async with http.session.get(path, headers={"Accept": TABLE}) as response:
        assert response.status == 200
        return orjson.loads(await response.read())


async def test_a_volume_is_stored_pending_with_retain_filesystem_and_the_pv_protection_finalizer(http) -> None:
    status, created = await http.post(PVS, volume("pv1"))
    assert status == 201, created
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"]["phase"] == "Pending"
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


async def test_a_claim_gets_the_default_class_and_the_pvc_protection_finalizer(http) -> None:
    status, created = await http.post(PVCS, claim("data"))
    assert status == 201, created
    assert created["spec"]["storageClassName"] == "local-path"
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"] == {"phase": "Pending"}
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    status, created = await http.post(PVCS, claim("static", storageClassName=""))
    assert status == 201 and created["spec"]["storageClassName"] == ""


async def test_the_built_in_local_path_class_is_the_default_and_waits_for_the_first_consumer(http) -> None:
    status, sc = await http.get(f"{CLASSES}/local-path")
    assert status == 200
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert (sc["provisioner"], sc["reclaimPolicy"], sc["volumeBindingMode"]) == (
        "minik.io/local-path", "Delete", "WaitForFirstConsumer")


async def test_an_invalid_volume_is_refused_with_kubernetes_causes(http) -> None:
    status, body = await http.post(PVS, {"metadata": {"name": "bad"}, "spec": {
        "capacity": {"storage": "1Gi", "cpu": "1"}, "accessModes": ["ReadWriteSometimes"],
        "persistentVolumeReclaimPolicy": "Shred", "volumeMode": "Tape"}})
    assert status == 422, body
    assert {"spec.capacity", "spec.accessModes", "spec.persistentVolumeReclaimPolicy", "spec.volumeMode",
            "spec"} <= fields(body)
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert causes["spec"]["message"] == "Required value: must specify a volume type"
    assert causes["spec.accessModes"]["reason"] == "FieldValueNotSupported"
    status, body = await http.post(PVS, volume("two", local={"path": "/x"}))
    assert status == 422
    assert {"spec.local", "spec.nodeAffinity"} <= fields(body)
    status, body = await http.post(PVS, volume("neg", size="-1Gi"))
    assert status == 422 and fields(body) == {"spec.capacity[storage]"}
    status, body = await http.post(PVS, volume("lots", size="lots"))
    assert (status, body["reason"]) == (400, "BadRequest"), "not a quantity: the decoder refuses it, as Kubernetes'"


async def test_an_invalid_claim_is_refused_with_kubernetes_causes(http) -> None:
    status, body = await http.post(PVCS, {"metadata": {"name": "bad"}, "spec": {
        "resources": {"requests": {"storage": "0"}}, "storageClassName": "Not_A_Name"}})
    assert status == 422, body
    causes = {c["field"]: c["message"] for c in body["details"]["causes"]}
    assert causes["spec.accessModes"] == "Required value: at least 1 access mode is required"
    assert causes["spec.resources[storage]"] == 'Invalid value: "0": must be greater than zero'
    assert "spec.storageClassName" in causes
    status, body = await http.post(PVCS, claim("nosize") | {"spec": {"accessModes": ["ReadWriteOnce"]}})
    assert status == 422 and fields(body) == {"spec.resources[storage]"}
    status, body = await http.post(PVCS, claim("pod", accessModes=["ReadWriteOncePod", "ReadOnlyMany"]))
    assert status == 422 and fields(body) == {"spec.accessModes"}


async def test_a_claim_spec_is_immutable_but_a_bound_claim_may_grow_and_not_shrink(http) -> None:
    await http.post(CLASSES, {"metadata": {"name": "grow"}, "provisioner": "example.com/grow",
                              "allowVolumeExpansion": True})
    await http.post(PVCS, claim("data", storageClassName="grow"))
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"accessModes": ["ReadWriteMany"]}})
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec"
    assert "spec is immutable after creation except resources.requests" in body["message"]
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    assert status == 422, "an unbound claim keeps its size"
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"volumeName": "pv-a"}})
    assert status == 200, body
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"volumeName": "pv-b"}})
    assert status == 422, "volumeName is set once"
    status, body = await http.patch(f"{PVCS}/data/status", {"status": {"phase": "Bound"}})
    assert status == 200, body
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    assert status == 200, body
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"resources": {"requests": {"storage": "1Gi"}}}})
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.resources.requests.storage"


async def test_growing_a_claim_whose_class_does_not_allow_expansion_is_forbidden(http) -> None:
    await http.post(PVCS, claim("data", volumeName="pv-a"))
    await http.patch(f"{PVCS}/data/status", {"status": {"phase": "Bound"}})
    status, body = await http.patch(f"{PVCS}/data", {"spec": {"resources": {"requests": {"storage": "5Gi"}}}})
    assert status == 403, body
    assert "only dynamically provisioned pvc can be resized" in body["message"]


async def test_a_volume_source_and_mode_are_immutable_and_its_reclaim_policy_is_not(http) -> None:
    await http.post(PVS, volume("pv1"))
    status, body = await http.patch(PVS + "/pv1", {"spec": {"hostPath": {"path": "/elsewhere"}}})
    assert status == 422 and fields(body) == {"spec.persistentvolumesource"}
    status, body = await http.patch(PVS + "/pv1", {"spec": {"volumeMode": "Block"}})
    assert status == 422 and fields(body) == {"spec.volumeMode"}
    status, body = await http.patch(PVS + "/pv1", {"spec": {"persistentVolumeReclaimPolicy": "Delete"}})
    assert status == 200 and body["spec"]["persistentVolumeReclaimPolicy"] == "Delete"


async def test_a_storage_class_is_defaulted_validated_and_keeps_its_provisioner_and_parameters(http) -> None:
    status, sc = await http.post(CLASSES, {"metadata": {"name": "fast"}, "provisioner": "example.com/fast",
                                           "parameters": {"tier": "ssd"}})
    assert status == 201, sc
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    status, body = await http.post(CLASSES, {"metadata": {"name": "bad"}, "reclaimPolicy": "Recycle",
                                             "volumeBindingMode": "Later"})
    assert status == 422
    assert fields(body) == {"provisioner", "reclaimPolicy", "volumeBindingMode"}
    for change, field in (({"parameters": {"tier": "hdd"}}, "parameters"),
                          ({"provisioner": "example.com/slow"}, "provisioner"),
                          ({"reclaimPolicy": "Retain"}, "reclaimPolicy"),
                          ({"volumeBindingMode": "WaitForFirstConsumer"}, "volumeBindingMode")):
        status, body = await http.patch(f"{CLASSES}/fast", change)
        assert status == 422 and fields(body) == {field}, (change, body)
    causes = (await http.patch(f"{CLASSES}/fast", {"provisioner": "x/y"}))[1]["details"]["causes"]
    assert causes[0]["message"] == "Forbidden: updates to provisioner are forbidden."


async def test_kubectl_columns_of_volumes_claims_and_classes(http) -> None:
    await http.post(PVS, volume("pv1", "5Gi", accessModes=["ReadWriteMany", "ReadWriteOnce"],
                                storageClassName="manual",
                                claimRef={"namespace": "default", "name": "data"}))
    await http.post(PVCS, claim("data", "5Gi", storageClassName="manual", volumeName="pv1"))
    await http.patch(f"{PVCS}/data/status", {"status": {"phase": "Bound", "capacity": {"storage": "5Gi"},
                                                        "accessModes": ["ReadWriteOnce", "ReadWriteMany"]}})
    pv = await table(http, PVS)
    assert [c["name"] for c in pv["columnDefinitions"]] == [
        "Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass",
        "VolumeAttributesClass", "Reason", "Age", "VolumeMode"]
    assert pv["rows"][0]["cells"][:9] == ["pv1", "5Gi", "RWO,RWX", "Retain", "Pending", "default/data", "manual",
                                          "<unset>", ""]
    pvc = await table(http, PVCS)
    assert [c["name"] for c in pvc["columnDefinitions"]] == [
        "Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age",
        "VolumeMode"]
    assert pvc["rows"][0]["cells"][:7] == ["data", "Bound", "pv1", "5Gi", "RWO,RWX", "manual", "<unset>"]
    sc = await table(http, CLASSES)
    assert [c["name"] for c in sc["columnDefinitions"]] == [
        "Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"]
    assert sc["rows"][0]["cells"][:5] == ["local-path (default)", "minik.io/local-path", "Delete",
                                          "WaitForFirstConsumer", False]


async def test_a_deleted_claim_with_its_finalizer_is_terminating(http) -> None:
    await http.post(PVCS, claim("data"))
    status, deleted = await http.delete(f"{PVCS}/data")
    assert status == 200 and deleted["metadata"]["deletionTimestamp"]
    pvc = await table(http, PVCS)
    assert pvc["rows"][0]["cells"][1] == "Terminating"


async def test_short_names_resolve_in_discovery(http) -> None:
    status, core = await http.get("/api/v1")
    short = {r["name"]: r.get("shortNames") for r in core["resources"]}
    assert short["persistentvolumes"] == ["pv"] and short["persistentvolumeclaims"] == ["pvc"]
    assert "persistentvolumes/status" in short and "persistentvolumeclaims/status" in short
    status, storage = await http.get("/apis/storage.k8s.io/v1")
    assert status == 200
    assert {r["name"]: r.get("shortNames") for r in storage["resources"]}["storageclasses"] == ["sc"]


async def test_a_claims_metadata_may_change(http) -> None:
    await http.post(PVCS, claim("data"))
    status, body = await http.patch(f"{PVCS}/data", {"metadata": {"annotations": {
        "volume.kubernetes.io/selected-node": "node-a"}}})
    assert status == 200, body


async def test_the_stateful_example_is_accepted_as_it_is(http) -> None:
    from pathlib import Path

    import yaml

    paths = {"Service": "/api/v1/namespaces/default/services",
             "StatefulSet": "/apis/apps/v1/namespaces/default/statefulsets"}
    manifest = Path(__file__).resolve().parents[2] / "manifests" / "stateful" / "web.yaml"
    documents = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    assert [d["kind"] for d in documents] == ["Service", "StatefulSet"]
    for document in documents:
        status, body = await http.post(paths[document["kind"]], document)
        assert status == 201, body
    assert body["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "www"


async def test_a_quota_counts_claims_storage_in_all_and_per_class(http) -> None:
    quotas = "/api/v1/namespaces/default/resourcequotas"
    status, body = await http.post(quotas, {"metadata": {"name": "q"}, "spec": {"hard": {
        "requests.storage": "3Gi", "local-path.storageclass.storage.k8s.io/persistentvolumeclaims": "1"}}})
    assert status == 201, body
    assert (await http.post(PVCS, claim("one", "2Gi")))[0] == 201
    status, body = await http.post(PVCS, claim("two", "1Gi"))
    assert status == 403
    assert body["message"] == ('persistentvolumeclaims "two" is forbidden: exceeded quota: q, requested: '
                               'local-path.storageclass.storage.k8s.io/persistentvolumeclaims=1, used: '
                               'local-path.storageclass.storage.k8s.io/persistentvolumeclaims=1, limited: '
                               'local-path.storageclass.storage.k8s.io/persistentvolumeclaims=1')
    status, body = await http.post(PVCS, claim("big", "2Gi", storageClassName=""))
    assert status == 403 and "requested: requests.storage=2Gi, used: requests.storage=2Gi, limited: " \
                             "requests.storage=3Gi" in body["message"]
    assert (await http.post(PVCS, claim("fits", "1Gi", storageClassName="")))[0] == 201
