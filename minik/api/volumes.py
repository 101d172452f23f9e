"""What the storage components share about persistent volumes: the annotations Kubernetes' binder, scheduler and
provisioners write, the built-in ``local-path`` StorageClass, and pure helpers over claims, volumes and classes
(does a volume satisfy a claim, which node may reach a volume, where a claim's volume lives on disk).

The PV binder and the local-path provisioner (minik.controllers), the VolumeBinding plugin (minik.scheduler) and
the kubelet's volume mounts (minik.kubelet) all read these, so they agree without talking to each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minik.api.placement import node_selector_term_matches
from minik.api.quantity import parse_quantity
from minik.api.selectors import selector_from_dict

Obj = dict[str, Any]

#: the built-in dynamic provisioner and its default class (as k3s's local-path provisioner and kind's standard class)
LOCAL_PATH_CLASS = "local-path"
LOCAL_PATH_PROVISIONER = "minik.io/local-path"
#: on a Node, set by its kubelet: the directory under which that node keeps local-path volumes
LOCAL_PATH_ROOT_ANNOTATION = "minik.io/local-path-root"
#: where local-path volumes live on a node that does not say (simulated nodes)
DEFAULT_LOCAL_PATH_ROOT = "/var/lib/minik/local-path"
#: on a provisioned PV: the node it lives on (a label, so that a kubelet can list its own volumes)
LOCAL_PATH_NODE_LABEL = "minik.io/local-path-node"

IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"

IMMEDIATE, WAIT_FOR_FIRST_CONSUMER = "Immediate", "WaitForFirstConsumer"


def local_path_class() -> Obj:
    """The default StorageClass every minik cluster starts with."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": LOCAL_PATH_CLASS, "annotations": {IS_DEFAULT_CLASS: "true"}},
            "provisioner": LOCAL_PATH_PROVISIONER, "reclaimPolicy": "Delete",
            "volumeBindingMode": WAIT_FOR_FIRST_CONSUMER, "allowVolumeExpansion": False}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def claim_class(claim: Mapping[str, Any]) -> str:
    """The claim's class ('' for none), the deprecated beta annotation first, as Kubernetes reads it."""
    beta = (_meta(claim).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else _spec(claim).get("storageClassName") or "")


def volume_class(pv: Mapping[str, Any]) -> str:
    beta = (_meta(pv).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else _spec(pv).get("storageClassName") or "")


def _size(value: Any) -> float:
    try:
        return float(parse_quantity(str(value)))
    except ValueError:
        return 0.0


def requested_size(claim: Mapping[str, Any]) -> float:
    return _size(((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage", 0))


def volume_size(pv: Mapping[str, Any]) -> float:
    return _size((_spec(pv).get("capacity") or {}).get("storage", 0))


def claim_key(claim: Mapping[str, Any]) -> str:
    meta = _meta(claim)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def claimed_by(pv: Mapping[str, Any]) -> str | None:
    """NAMESPACE/NAME of the claim a volume's claimRef names (None when it names none)."""
    ref = _spec(pv).get("claimRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return None
    return f"{ref.get('namespace', '')}/{ref['name']}"


def volume_matches(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Whether an unclaimed volume could serve the claim (Kubernetes' findMatchingVolume, but for the choice
    of the smallest): same class, at least the requested size, every requested access mode, the same volume
    mode, and the claim's selector matching the volume's labels."""
    spec, claim_spec = _spec(pv), _spec(claim)
    if volume_class(pv) != claim_class(claim):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (claim_spec.get("volumeMode") or "Filesystem"):
        return False
    if volume_size(pv) < requested_size(claim):
        return False
    modes = set(spec.get("accessModes") or [])
    if not set(claim_spec.get("accessModes") or []) <= modes:
        return False
    selector = claim_spec.get("selector")
    if isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions")):
        try:
            matcher = selector_from_dict(selector)
        except ValueError:
            return False
        if not matcher.matches({str(k): str(v) for k, v in (_meta(pv).get("labels") or {}).items()}):
            return False
    return True


def volume_fits_node(pv: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether a pod on ``node`` can reach the volume: no node affinity, or a required term the node matches."""
    affinity = _spec(pv).get("nodeAffinity")
    if not isinstance(affinity, dict):
        return True
    required = affinity.get("required")
    if not isinstance(required, dict):
        return True
    return any(node_selector_term_matches(term, node) for term in required.get("nodeSelectorTerms") or []
               if isinstance(term, dict))


def volume_path(pv: Mapping[str, Any]) -> str | None:
    """The host directory of a hostPath or local volume (None for other sources, which minik cannot mount)."""
    spec = _spec(pv)
    for source in ("hostPath", "local"):
        value = spec.get(source)
        if isinstance(value, dict) and value.get("path"):
            return str(value["path"])
    return None


def pod_claims(pod: Mapping[str, Any]) -> list[str]:
    """The names of the claims a pod's volumes use (persistentVolumeClaim, and the claims of ephemeral volumes)."""
    names = []
    for volume in _spec(pod).get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict) and source.get("claimName"):
            names.append(str(source["claimName"]))
        elif isinstance(volume.get("ephemeral"), dict):
            names.append(f"{_meta(pod).get('name', '')}-{volume.get('name', '')}")
    return names


def binding_mode(storage_class: Mapping[str, Any] | None) -> str:
    if storage_class is None:
        return IMMEDIATE
    return str(storage_class.get("volumeBindingMode") or IMMEDIATE)
