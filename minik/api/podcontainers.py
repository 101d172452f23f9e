"""Which container of a pod a logs, exec or attach request means, with Kubernetes' answers when it cannot tell
(the API server's LogLocation / ExecLocation rules); shared by the API server, the kubelet and the CLI."""

from __future__ import annotations

from typing import Any

from minik.api.errors import bad_request

Obj = dict[str, Any]

DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"


def _names(pod: Obj, key: str) -> list[str]:
    return [str(c.get("name")) for c in (pod.get("spec") or {}).get(key) or []]


def container_spec(pod: Obj, name: str) -> Obj | None:
    """The spec of the app, init or ephemeral container called ``name``."""
    spec = pod.get("spec") or {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []) + \
            (spec.get("ephemeralContainers") or []):
        if container.get("name") == name:
            return dict(container)
    return None


def default_container(pod: Obj) -> str | None:
    """The container kubectl picks when none is named: the annotated default, or the only (else the first)
    app container."""
    names = _names(pod, "containers")
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CONTAINER_ANNOTATION)
    if annotated in names:
        return str(annotated)
    return names[0] if names else None


def resolve_container(pod: Obj, name: str | None) -> str:
    """The container a request for ``name`` (maybe empty) means; 400 BadRequest as Kubernetes words it."""
    pod_name = (pod.get("metadata") or {}).get("name", "")
    apps, inits = _names(pod, "containers"), _names(pod, "initContainers")
    ephemerals = _names(pod, "ephemeralContainers")
    if not name:
        if len(apps) == 1:
            return apps[0]
        message = f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(apps)}]"
        if inits:
            message += f" or one of the init containers: [{' '.join(inits)}]"
        if ephemerals:
            message += f" or one of the ephemeral containers: [{' '.join(ephemerals)}]"
        raise bad_request(message)
    if name not in apps and name not in inits and name not in ephemerals:
        raise bad_request(f"container {name} is not valid for pod {pod_name}")
    return name


def bound_node(pod: Obj) -> str:
    """The node a pod runs on; 400 when it has none yet."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise bad_request(f"pod {(pod.get('metadata') or {}).get('name', '')} does not have a host assigned")
    return str(node)


def waiting_reason(pod: Obj, name: str) -> str:
    """Why a container that has not run yet waits, from the pod's status (ContainerCreating when unknown)."""
    status = pod.get("status") or {}
    for item in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or []) + \
            (status.get("ephemeralContainerStatuses") or []):
        if item.get("name") == name:
            waiting = (item.get("state") or {}).get("waiting")
            if waiting and waiting.get("reason"):
                return str(waiting["reason"])
    return "ContainerCreating"
