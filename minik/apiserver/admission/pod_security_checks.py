"""The Pod Security Standards' checks (baseline and restricted, as of Kubernetes 1.32), each a pure function of a
pod's metadata and spec returning a violation (reason and detail, in Kubernetes' words) or None.

``evaluate(level, metadata, spec)`` runs every check of a level (baseline's for baseline; baseline's then
restricted's for restricted), each level's checks in the order of their ids, as the pod-security-admission
library reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

LEVELS = ("privileged", "baseline", "restricted")

#: capabilities a baseline container may add (the container runtime's defaults)
BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                   "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
SAFE_SYSCTLS = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                          "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
                          "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
                          "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                          "net.ipv4.tcp_keepalive_probes"})
RESTRICTED_VOLUME_TYPES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                     "persistentVolumeClaim", "projected", "secret"})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})


@dataclass(frozen=True)
class Violation:
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


def _containers(spec: Obj) -> Iterator[Obj]:
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(group) or []:
            if isinstance(container, dict):
                yield container


def _sc(obj: Obj) -> Obj:
    value = obj.get("securityContext")
    return value if isinstance(value, dict) else {}


def _names(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _plural(word: str, names: list[str]) -> str:
    return f"{word}{'s' if len(names) > 1 else ''} {_names(names)}"


def _verb(names: list[str], one: str, many: str) -> str:
    return many if len(names) > 1 else one


# -- baseline ---------------------------------------------------------------------------------------------------
def app_armor_profile(meta: Obj, spec: Obj) -> Violation | None:
    bad = []
    for key, value in ((meta.get("annotations") or {}).items()):
        if str(key).startswith("container.apparmor.security.beta.kubernetes.io/") and \
                not (value == "runtime/default" or str(value).startswith("localhost/")):
            bad.append(f'{key}="{value}"')
    for owner in [spec, *_containers(spec)]:
        profile = _sc(owner).get("appArmorProfile")
        if isinstance(profile, dict) and profile.get("type") not in (None, "RuntimeDefault", "Localhost"):
            where = "pod" if owner is spec else f'container "{owner.get("name", "")}"'
            bad.append(f'{where} must not set securityContext.appArmorProfile.type to "{profile.get("type")}"')
    return Violation("forbidden AppArmor profiles", ", ".join(bad)) if bad else None


def capabilities_baseline(meta: Obj, spec: Obj) -> Violation | None:
    names, caps = [], []
    for container in _containers(spec):
        added = ((_sc(container).get("capabilities") or {}).get("add")) or []
        forbidden = [str(c) for c in added if str(c) not in BASELINE_CAPABILITIES]
        if forbidden:
            names.append(str(container.get("name", "")))
            caps += [c for c in forbidden if c not in caps]
    if not names:
        return None
    return Violation("non-default capabilities", f"{_plural('container', names)} must not include {_names(caps)} "
                     "in securityContext.capabilities.add")


def host_namespaces(meta: Obj, spec: Obj) -> Violation | None:
    bad = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True]
    return Violation("host namespaces", ", ".join(bad)) if bad else None


def host_path_volumes(meta: Obj, spec: Obj) -> Violation | None:
    names = [str(v.get("name", "")) for v in spec.get("volumes") or [] if isinstance(v, dict) and v.get("hostPath")]
    return Violation("hostPath volumes", _plural("volume", names)) if names else None


def host_ports(meta: Obj, spec: Obj) -> Violation | None:
    names, ports = [], []
    for container in _containers(spec):
        used = [str(p.get("hostPort")) for p in container.get("ports") or []
                if isinstance(p, dict) and p.get("hostPort") not in (None, 0)]
        if used:
            names.append(str(container.get("name", "")))
            ports += [p for p in used if p not in ports]
    if not names:
        return None
    return Violation("hostPort", f"{_plural('container', names)} {_verb(names, 'uses', 'use')} "
                     f"hostPort{'s' if len(ports) > 1 else ''} {', '.join(ports)}")


def host_process(meta: Obj, spec: Obj) -> Violation | None:
    names = [str(c.get("name", "")) for c in _containers(spec)
             if (_sc(c).get("windowsOptions") or {}).get("hostProcess") is True]
    pod = (_sc(spec).get("windowsOptions") or {}).get("hostProcess") is True
    if not names and not pod:
        return None
    who = "pod and " + _plural("container", names) if pod and names else ("pod" if pod else
                                                                           _plural("container", names))
    return Violation("hostProcess", f"{who} must not set securityContext.windowsOptions.hostProcess=true")


def privileged(meta: Obj, spec: Obj) -> Violation | None:
    names = [str(c.get("name", "")) for c in _containers(spec) if _sc(c).get("privileged") is True]
    if not names:
        return None
    return Violation("privileged", f"{_plural('container', names)} must not set securityContext.privileged=true")


def proc_mount(meta: Obj, spec: Obj) -> Violation | None:
    bad = [(str(c.get("name", "")), str(_sc(c).get("procMount"))) for c in _containers(spec)
           if _sc(c).get("procMount") not in (None, "Default")]
    if not bad:
        return None
    names = [name for name, _ in bad]
    values = list(dict.fromkeys(value for _, value in bad))
    return Violation("procMount", f"{_plural('container', names)} must not set securityContext.procMount to "
                     f"{_names(values)}")


def se_linux_options(meta: Obj, spec: Obj) -> Violation | None:
    bad: list[str] = []
    for owner in [spec, *_containers(spec)]:
        options = _sc(owner).get("seLinuxOptions")
        if not isinstance(options, dict):
            continue
        problems = []
        if str(options.get("type") or "") not in SELINUX_TYPES:
            problems.append(f'type "{options.get("type")}"')
        for field in ("user", "role"):
            if options.get(field):
                problems.append(f'{field} "{options[field]}"')
        if problems:
            where = "pod" if owner is spec else f'container "{owner.get("name", "")}"'
            bad.append(f"{where} set forbidden securityContext.seLinuxOptions: {'; '.join(problems)}")
    return Violation("seLinuxOptions", ", ".join(bad)) if bad else None


def _seccomp_type(owner: Obj) -> str | None:
    profile = _sc(owner).get("seccompProfile")
    return str(profile.get("type")) if isinstance(profile, dict) and profile.get("type") else None


def seccomp_profile_baseline(meta: Obj, spec: Obj) -> Violation | None:
    bad = []
    if _seccomp_type(spec) == "Unconfined":
        bad.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    names = [str(c.get("name", "")) for c in _containers(spec) if _seccomp_type(c) == "Unconfined"]
    if names:
        bad.append(f'{_plural("container", names)} must not set securityContext.seccompProfile.type to '
                   '"Unconfined"')
    return Violation("seccompProfile", "; ".join(bad)) if bad else None


def sysctls(meta: Obj, spec: Obj) -> Violation | None:
    names = [str(s.get("name", "")) for s in _sc(spec).get("sysctls") or []
             if isinstance(s, dict) and str(s.get("name", "")) not in SAFE_SYSCTLS]
    return Violation("forbidden sysctls", ", ".join(names)) if names else None


# -- restricted -------------------------------------------------------------------------------------------------
def allow_privilege_escalation(meta: Obj, spec: Obj) -> Violation | None:
    names = [str(c.get("name", "")) for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not names:
        return None
    return Violation("allowPrivilegeEscalation != false",
                     f"{_plural('container', names)} must set securityContext.allowPrivilegeEscalation=false")


def capabilities_restricted(meta: Obj, spec: Obj) -> Violation | None:
    no_drop, adding, caps = [], [], []
    for container in _containers(spec):
        capabilities = _sc(container).get("capabilities") or {}
        if "ALL" not in [str(c) for c in capabilities.get("drop") or []]:
            no_drop.append(str(container.get("name", "")))
        extra = [str(c) for c in capabilities.get("add") or [] if str(c) != "NET_BIND_SERVICE"]
        if extra:
            adding.append(str(container.get("name", "")))
            caps += [c for c in extra if c not in caps]
    parts = []
    if no_drop:
        parts.append(f'{_plural("container", no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        parts.append(f"{_plural('container', adding)} must not include {_names(caps)} in "
                     "securityContext.capabilities.add")
    return Violation("unrestricted capabilities", "; ".join(parts)) if parts else None


def restricted_volumes(meta: Obj, spec: Obj) -> Violation | None:
    names, kinds = [], []
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        types = [k for k in volume if k != "name" and k not in RESTRICTED_VOLUME_TYPES]
        if types:
            names.append(str(volume.get("name", "")))
            kinds += [t for t in types if t not in kinds]
    if not names:
        return None
    return Violation("restricted volume types", f"{_plural('volume', names)} {_verb(names, 'uses', 'use')} "
                     f"restricted volume type{'s' if len(kinds) > 1 else ''} {_names(kinds)}")


def run_as_non_root(meta: Obj, spec: Obj) -> Violation | None:
    pod = _sc(spec).get("runAsNonRoot")
    if pod is False:
        return Violation("runAsNonRoot != true", "pod must not set securityContext.runAsNonRoot=false")
    explicit_false = [str(c.get("name", "")) for c in _containers(spec) if _sc(c).get("runAsNonRoot") is False]
    if explicit_false:
        return Violation("runAsNonRoot != true", f"{_plural('container', explicit_false)} must not set "
                         "securityContext.runAsNonRoot=false")
    if pod is True:
        return None
    unset = [str(c.get("name", "")) for c in _containers(spec) if _sc(c).get("runAsNonRoot") is not True]
    if not unset:
        return None
    return Violation("runAsNonRoot != true", f"pod or {_plural('container', unset)} must set "
                     "securityContext.runAsNonRoot=true")


def run_as_user(meta: Obj, spec: Obj) -> Violation | None:
    bad = []
    if _sc(spec).get("runAsUser") == 0:
        bad.append("pod must not set runAsUser=0")
    names = [str(c.get("name", "")) for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if names:
        bad.append(f"{_plural('container', names)} must not set runAsUser=0")
    return Violation("runAsUser=0", "; ".join(bad)) if bad else None


def seccomp_profile_restricted(meta: Obj, spec: Obj) -> Violation | None:
    allowed = ("RuntimeDefault", "Localhost")
    pod = _seccomp_type(spec)
    if pod is not None and pod not in allowed:
        return Violation("seccompProfile", f'pod must not set securityContext.seccompProfile.type to "{pod}"')
    bad = [str(c.get("name", "")) for c in _containers(spec)
           if _seccomp_type(c) is not None and _seccomp_type(c) not in allowed]
    if bad:
        return Violation("seccompProfile", f'{_plural("container", bad)} must not set '
                         'securityContext.seccompProfile.type to "Unconfined"')
    if pod is not None:
        return None
    unset = [str(c.get("name", "")) for c in _containers(spec) if _seccomp_type(c) is None]
    if not unset:
        return None
    return Violation("seccompProfile", f'pod or {_plural("container", unset)} must set '
                     'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')


Check = Callable[[Obj, Obj], Violation | None]

#: each level's own checks, by id (the restricted level also runs baseline's)
CHECKS: dict[str, list[tuple[str, Check]]] = {
    "baseline": sorted([
        ("appArmorProfile", app_armor_profile), ("capabilities_baseline", capabilities_baseline),
        ("hostNamespaces", host_namespaces), ("hostPathVolumes", host_path_volumes), ("hostPorts", host_ports),
        ("hostProcess", host_process), ("privileged", privileged), ("procMount", proc_mount),
        ("seLinuxOptions", se_linux_options), ("seccompProfile_baseline", seccomp_profile_baseline),
        ("sysctls", sysctls)], key=lambda item: item[0]),
    "restricted": sorted([
        ("allowPrivilegeEscalation", allow_privilege_escalation), ("capabilities_restricted", capabilities_restricted),
        ("restrictedVolumes", restricted_volumes), ("runAsNonRoot", run_as_non_root), ("runAsUser", run_as_user),
        ("seccompProfile_restricted", seccomp_profile_restricted)], key=lambda item: item[0]),
}


def evaluate(level: str, meta: Obj, spec: Obj) -> list[Violation]:
    """Every violation of ``level`` by a pod (its metadata and spec); none for ``privileged``."""
    if level == "privileged":
        return []
    checks = CHECKS["baseline"] + (CHECKS["restricted"] if level == "restricted" else [])
    found = []
    for _id, check in checks:
        violation = check(meta if isinstance(meta, dict) else {}, spec if isinstance(spec, dict) else {})
        if violation is not None:
            found.append(violation)
    return found
