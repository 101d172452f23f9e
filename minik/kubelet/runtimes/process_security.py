"""What the process runtime can honour of a securityContext, and how: a process runs on the host, in the
kubelet's namespaces, with no image and no root file system of its own.

Honoured: runAsUser, runAsGroup, supplementalGroups and fsGroup (the kubelet switches the process's user and
groups, which needs a kubelet running as root unless they are the kubelet's own); runAsNonRoot (checked against
the user the process will run as); allowPrivilegeEscalation: false (no_new_privs, set before the command runs);
capabilities.drop for a process not running as root (it has no capabilities to drop); privileged for one that
does; procMount Unmasked (the host's /proc is not masked).

Refused: capabilities.add, capabilities.drop for a root process, privileged for a non-root one,
readOnlyRootFilesystem, seccompProfile RuntimeDefault or Localhost, appArmorProfile, sysctls (they would change
the host) and hostUsers: false.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from minik.kubelet.runtimes.security import SecurityConfig

#: prctl(2)'s PR_SET_NO_NEW_PRIVS
_PR_SET_NO_NEW_PRIVS = 38


def _process_uid(security: SecurityConfig) -> int:
    return security.run_as_user if security.run_as_user is not None else os.geteuid()


def unsupported(security: SecurityConfig) -> list[str]:
    root = os.geteuid() == 0
    runs_as_root = _process_uid(security) == 0
    own_groups = set(os.getgroups()) | {os.getegid()}
    honoured = {
        "runAsUser": root or security.run_as_user == os.geteuid(),
        "runAsGroup": root or security.run_as_group == os.getegid(),
        "supplementalGroups": root or set(security.supplemental_groups) <= own_groups,
        "fsGroup": root or security.fs_group in own_groups,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": True,
        "capabilities.drop": not runs_as_root,
        "privileged": runs_as_root,
        "procMount": True,
    }
    return [name for name in security.set_fields() if not honoured.get(name, False)]


def _no_new_privileges() -> None:
    """Runs in the child between fork and exec."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def popen_options(security: SecurityConfig) -> dict[str, Any]:
    """The subprocess options that apply ``security`` (which ``unsupported`` found nothing to refuse in)."""
    options: dict[str, Any] = {}
    if os.geteuid() == 0:
        if security.run_as_user is not None:
            options["user"] = security.run_as_user
            options["extra_groups"] = list(security.supplemental_groups)  # not root's groups
        elif security.supplemental_groups:
            options["extra_groups"] = list(security.supplemental_groups)
        if security.run_as_group is not None:
            options["group"] = security.run_as_group
    if security.no_new_privileges:
        options["preexec_fn"] = _no_new_privileges
    return options
