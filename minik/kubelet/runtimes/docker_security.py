"""A container's securityContext as Docker's create options: User, GroupAdd, Privileged, CapAdd and CapDrop,
SecurityOpt (no-new-privileges, seccomp, apparmor), ReadonlyRootfs, and the masked and read-only /proc paths
(procMount); the pod's sysctls go to its sandbox, which owns the network and IPC namespaces they belong to.

Kubernetes runs a container without a seccomp profile Unconfined (the kubelet's default without
--seccomp-default), so here too: Docker's own default profile is RuntimeDefault. Docker cannot give one
container a user namespace of its own (userns-remap is engine-wide), so ``hostUsers: false`` is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minik.kubelet.runtimes.errors import RuntimeFailure
from minik.kubelet.runtimes.security import SecurityConfig

Obj = dict[str, Any]


def unsupported(security: SecurityConfig) -> list[str]:
    return [] if security.host_users else ["hostUsers"]


def user_option(security: SecurityConfig, image_user: str) -> str:
    """Docker's User: UID or UID:GID; runAsGroup alone keeps the image's user with that group."""
    if security.run_as_user is not None:
        group = f":{security.run_as_group}" if security.run_as_group is not None else ""
        return f"{security.run_as_user}{group}"
    if security.run_as_group is not None:
        return f"{image_user.split(':', 1)[0] or '0'}:{security.run_as_group}"
    return ""


def _seccomp(security: SecurityConfig, seccomp_dir: Path | None) -> list[str]:
    if security.seccomp == "Unconfined":
        return ["seccomp=unconfined"]
    if security.seccomp == "Localhost":
        path = (seccomp_dir or Path("/var/lib/kubelet/seccomp")) / security.seccomp_localhost
        try:
            return [f"seccomp={path.read_text()}"]
        except OSError as exc:
            raise RuntimeFailure("CreateContainerError", f'cannot load seccomp profile "{path}": open {path}: '
                                                         f"{(exc.strerror or str(exc)).lower()}") from None
    return []  # RuntimeDefault: Docker's default profile


def _apparmor(security: SecurityConfig) -> list[str]:
    if security.apparmor == "Unconfined":
        return ["apparmor=unconfined"]
    if security.apparmor == "Localhost" and security.apparmor_localhost:
        return [f"apparmor={security.apparmor_localhost}"]
    return []


def docker_security(security: SecurityConfig, image_user: str, seccomp_dir: Path | None) -> tuple[str, Obj]:
    """(the container's User, its HostConfig security fields)."""
    host: Obj = {}
    if security.supplemental_groups:
        host["GroupAdd"] = [str(g) for g in security.supplemental_groups]
    if security.privileged:
        host["Privileged"] = True
    if security.capabilities_add:
        host["CapAdd"] = list(security.capabilities_add)
    if security.capabilities_drop:
        host["CapDrop"] = list(security.capabilities_drop)
    if security.read_only_root_filesystem:
        host["ReadonlyRootfs"] = True
    options = _seccomp(security, seccomp_dir) + _apparmor(security)
    if security.no_new_privileges:
        options.append("no-new-privileges")
    if options:
        host["SecurityOpt"] = options
    if security.proc_mount == "Unmasked":
        host["MaskedPaths"] = []
        host["ReadonlyPaths"] = []
    return user_option(security, image_user), host


def sandbox_sysctls(pod: Obj) -> dict[str, str]:
    context = (pod.get("spec") or {}).get("securityContext") or {}
    return {str(s.get("name", "")): str(s.get("value", "")) for s in context.get("sysctls") or []
            if isinstance(s, dict) and s.get("name")}
