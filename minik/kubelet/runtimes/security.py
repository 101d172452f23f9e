"""A container's security settings as a runtime applies them: the pod's securityContext overlaid with the
container's (Kubernetes' DetermineEffectiveSecurityContext), plus the runAsNonRoot check every runtime makes
once it knows which user the image runs as.

Each runtime says which settings it cannot honour (``Runtime.unsupported``); the pod worker refuses to start
such a container (CreateContainerConfigError and a Failed event) rather than run it without them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minik.kubelet.runtimes.errors import RuntimeFailure

Obj = dict[str, Any]

CONFIG_ERROR = "CreateContainerConfigError"

#: where a container's securityContext fields are named in messages
_CONTAINER = "securityContext"
_POD = "spec.securityContext"


@dataclass(frozen=True)
class SecurityConfig:
    """The effective settings of one container; the defaults are what Kubernetes does with none set."""

    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool = False
    supplemental_groups: tuple[int, ...] = ()
    """the pod's supplementalGroups and its fsGroup, which Kubernetes adds to every container's groups"""
    fs_group: int | None = None
    privileged: bool = False
    capabilities_add: tuple[str, ...] = ()
    capabilities_drop: tuple[str, ...] = ()
    no_new_privileges: bool = False
    """allowPrivilegeEscalation: false"""
    read_only_root_filesystem: bool = False
    seccomp: str = "Unconfined"
    """Unconfined (Kubernetes' default without --seccomp-default), RuntimeDefault or Localhost"""
    seccomp_localhost: str = ""
    apparmor: str = ""
    """"" (the runtime's default), RuntimeDefault, Unconfined or Localhost"""
    apparmor_localhost: str = ""
    proc_mount: str = "Default"
    sysctls: tuple[tuple[str, str], ...] = ()
    """the pod's sysctls (they belong to the sandbox's namespaces)"""
    host_users: bool = True
    """spec.hostUsers: false asks for a user namespace"""

    def set_fields(self) -> list[str]:
        """The securityContext fields that ask for something beyond an unconfined, unprivileged default
        container, named as the API names them (for a runtime to say which it cannot honour)."""
        fields = []
        if self.run_as_user is not None:
            fields.append("runAsUser")
        if self.run_as_group is not None:
            fields.append("runAsGroup")
        if self.run_as_non_root:
            fields.append("runAsNonRoot")
        if self.supplemental_groups:
            fields.append("supplementalGroups")
        if self.fs_group is not None:
            fields.append("fsGroup")
        if self.privileged:
            fields.append("privileged")
        if self.capabilities_add:
            fields.append("capabilities.add")
        if self.capabilities_drop:
            fields.append("capabilities.drop")
        if self.no_new_privileges:
            fields.append("allowPrivilegeEscalation")
        if self.read_only_root_filesystem:
            fields.append("readOnlyRootFilesystem")
        if self.seccomp != "Unconfined":
            fields.append("seccompProfile")
        if self.apparmor and self.apparmor != "Unconfined":
            fields.append("appArmorProfile")
        if self.proc_mount != "Default":
            fields.append("procMount")
        if self.sysctls:
            fields.append("sysctls")
        if not self.host_users:
            fields.append("hostUsers")
        return fields


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _profile(context: Obj, key: str) -> tuple[str, str] | None:
    profile = context.get(key)
    if not isinstance(profile, dict) or not profile.get("type"):
        return None
    return str(profile["type"]), str(profile.get("localhostProfile") or "")


def effective(pod: Obj, container: Obj) -> SecurityConfig:
    """The container's settings: its own securityContext where it sets a field, else the pod's."""
    spec = pod.get("spec") or {}
    pod_sc: Obj = spec["securityContext"] if isinstance(spec.get("securityContext"), dict) else {}
    sc: Obj = container["securityContext"] if isinstance(container.get("securityContext"), dict) else {}

    def pick(key: str) -> Any:
        return sc[key] if sc.get(key) is not None else pod_sc.get(key)

    capabilities: Obj = sc["capabilities"] if isinstance(sc.get("capabilities"), dict) else {}
    fs_group = _int(pod_sc.get("fsGroup"))
    groups = [g for g in (_int(g) for g in pod_sc.get("supplementalGroups") or []) if g is not None]
    if fs_group is not None and fs_group not in groups:
        groups.append(fs_group)
    seccomp = _profile(sc, "seccompProfile") or _profile(pod_sc, "seccompProfile") or ("Unconfined", "")
    apparmor = _profile(sc, "appArmorProfile") or _profile(pod_sc, "appArmorProfile") or ("", "")
    privileged = sc.get("privileged") is True
    sysctls = tuple((str(s.get("name", "")), str(s.get("value", ""))) for s in pod_sc.get("sysctls") or []
                    if isinstance(s, dict))
    return SecurityConfig(
        run_as_user=_int(pick("runAsUser")), run_as_group=_int(pick("runAsGroup")),
        run_as_non_root=pick("runAsNonRoot") is True, supplemental_groups=tuple(groups), fs_group=fs_group,
        privileged=privileged,
        capabilities_add=tuple(str(c) for c in capabilities.get("add") or []),
        capabilities_drop=tuple(str(c) for c in capabilities.get("drop") or []),
        no_new_privileges=sc.get("allowPrivilegeEscalation") is False,
        read_only_root_filesystem=sc.get("readOnlyRootFilesystem") is True,
        # a privileged container runs unconfined whatever its profile says, as under Kubernetes
        seccomp="Unconfined" if privileged else seccomp[0], seccomp_localhost=seccomp[1],
        apparmor=apparmor[0], apparmor_localhost=apparmor[1],
        proc_mount=str(sc.get("procMount") or "Default"), sysctls=sysctls,
        host_users=spec.get("hostUsers") is not False)


def pod_label(pod: Obj) -> str:
    """NAME_NAMESPACE(UID), as the kubelet names a pod in its messages."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"


def image_uid(user: str) -> tuple[int | None, str]:
    """The image's configured user as (uid, name): ("", root) is uid 0; "1000:1000" is uid 1000; a name
    ("nobody") has no uid the kubelet can know."""
    head = user.split(":", 1)[0]
    if not head:
        return 0, ""
    return (int(head), "") if head.isdigit() else (None, head)


def verify_run_as_non_root(pod: Obj, container: str, security: SecurityConfig, user: str) -> None:
    """Kubernetes' verifyRunAsNonRoot: with runAsNonRoot, a container that would run as uid 0, or whose image
    names its user so the uid cannot be known, is not started (CreateContainerConfigError). ``user`` is the
    user the image runs as ("" for root)."""
    if not security.run_as_non_root:
        return
    where = f'(pod: "{pod_label(pod)}", container: {container})'
    if security.run_as_user is not None:
        if security.run_as_user == 0:
            raise RuntimeFailure(CONFIG_ERROR, f"container's runAsUser breaks non-root policy {where}")
        return
    uid, name = image_uid(user)
    if uid == 0:
        raise RuntimeFailure(CONFIG_ERROR, f"container has runAsNonRoot and image will run as root {where}")
    if uid is None:
        raise RuntimeFailure(CONFIG_ERROR, f"container has runAsNonRoot and image has non-numeric user ({name}), "
                                           f"cannot verify user is non-root {where}")


def refusal(runtime: str, fields: list[str]) -> RuntimeFailure:
    """The failure of a container asking for settings the runtime cannot honour."""
    return RuntimeFailure(CONFIG_ERROR, f"the {runtime} runtime cannot honour securityContext "
                                        f"{', '.join(fields)}; the container is not started without "
                                        f"{'them' if len(fields) > 1 else 'it'}")
