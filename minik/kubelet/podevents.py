"""The Events a kubelet writes about a pod's containers, worded as Kubernetes 1.32's kubelet words them
(reason and message), each pointing at the container (fieldPath spec.containers{NAME})."""

from __future__ import annotations

from typing import Any

from minik.events import NORMAL, WARNING, EventRecorder
from minik.kubelet.prober import container_field, pod_reference

Obj = dict[str, Any]


def pod_label(pod: Obj) -> str:
    """NAME_NAMESPACE(UID), as the kubelet names a pod in its messages."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"


class PodEvents:
    """Records container events for one kubelet; without a recorder (simulated nodes at scale) it records
    nothing."""

    def __init__(self, recorder: EventRecorder | None) -> None:
        self.recorder = recorder

    def _emit(self, pod: Obj, container: str, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(pod_reference(pod), type_, reason, message, field_path=container_field(pod, container))

    def pulled(self, pod: Obj, container: str, image: str, seconds: float | None) -> None:
        """``seconds`` is how long a pull took, or None when the image was already there."""
        if seconds is None:
            self._emit(pod, container, NORMAL, "Pulled", f'Container image "{image}" already present on machine')
        else:
            self._emit(pod, container, NORMAL, "Pulled", f'Successfully pulled image "{image}" in {seconds:.3f}s')

    def pull_failed(self, pod: Obj, container: str, image: str, reason: str, message: str) -> None:
        self._emit(pod, container, WARNING, "Failed", f'Failed to pull image "{image}": {message}')
        self._emit(pod, container, WARNING, "Failed", f"Error: {reason}")

    def pull_backoff(self, pod: Obj, container: str, image: str) -> None:
        self._emit(pod, container, NORMAL, "BackOff", f'Back-off pulling image "{image}"')
        self._emit(pod, container, WARNING, "Failed", "Error: ImagePullBackOff")

    def created(self, pod: Obj, container: str) -> None:
        self._emit(pod, container, NORMAL, "Created", f"Created container: {container}")

    def started(self, pod: Obj, container: str) -> None:
        self._emit(pod, container, NORMAL, "Started", f"Started container {container}")

    def failed(self, pod: Obj, container: str, message: str) -> None:
        self._emit(pod, container, WARNING, "Failed", f"Error: {message}")

    def crash_backoff(self, pod: Obj, container: str) -> None:
        self._emit(pod, container, WARNING, "BackOff",
                   f"Back-off restarting failed container {container} in pod {pod_label(pod)}")

    def killing(self, pod: Obj, container: str, why: str = "", message: str = "") -> None:
        """Stopping a container: at deletion (no ``why``), after a failed probe (``why`` says which), or for the
        reason ``message`` gives (FailedPostStartHook)."""
        if message:
            self._emit(pod, container, NORMAL, "Killing", message)
        elif why:
            self._emit(pod, container, NORMAL, "Killing", f"Container {container} failed {why} probe, will be "
                                                          "restarted")
        else:
            self._emit(pod, container, NORMAL, "Killing", f"Stopping container {container}")

    def prestop_failed(self, pod: Obj, container: str, message: str) -> None:
        self._emit(pod, container, WARNING, "FailedPreStopHook",
                   f'PreStopHook failed for container "{container}" in pod {pod_label(pod)}: {message}')

    def post_start_failed(self, pod: Obj, container: str) -> None:
        # the hook's output is not in the event: it could show a secret (Kubernetes words it so too)
        self._emit(pod, container, WARNING, "FailedPostStartHook", "PostStartHook failed")
