"""The securityContext rules every runtime shares, without a runtime: the container's fields win over the pod's,
fsGroup joins the groups, privileged runs unconfined, and runAsNonRoot's three refusals are worded as
Kubernetes words them."""

from __future__ import annotations

import pytest

from minik.kubelet.runtimes.docker_security import docker_security
from minik.kubelet.runtimes.errors import RuntimeFailure
from minik.kubelet.runtimes.security import SecurityConfig, effective, verify_run_as_non_root

POD = {"metadata": {"name": "web", "namespace": "shop", "uid": "u-1"},
       "spec": {"securityContext": {"runAsUser": 1000, "runAsGroup": 2000, "runAsNonRoot": True, "fsGroup": 3000,
                                    "supplementalGroups": [4000], "seccompProfile": {"type": "RuntimeDefault"},
                                    "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}}}


def test_the_container_wins_over_the_pod_and_fs_group_joins_the_groups() -> None:
    security = effective(POD, {"name": "app", "securityContext": {"runAsUser": 1500,
                                                                  "seccompProfile": {"type": "Unconfined"}}})
    assert (security.run_as_user, security.run_as_group, security.run_as_non_root) == (1500, 2000, True)
    assert security.supplemental_groups == (4000, 3000) and security.seccomp == "Unconfined"
    assert security.sysctls == (("net.core.somaxconn", "1024"),)


def test_a_privileged_container_runs_unconfined_whatever_its_profile() -> None:
    security = effective(POD, {"name": "app", "securityContext": {"privileged": True}})
    user, host = docker_security(security, "", None)
    assert user == "1000:2000"
    assert host["Privileged"] is True and host["SecurityOpt"] == ["seccomp=unconfined"]
    assert host["GroupAdd"] == ["4000", "3000"]


def test_no_security_context_is_an_unconfined_container_as_the_image_says() -> None:
    security = effective({"metadata": {}, "spec": {}}, {"name": "app"})
    assert security == SecurityConfig() and security.set_fields() == []
    assert docker_security(security, "nobody", None) == ("", {"SecurityOpt": ["seccomp=unconfined"]})


@pytest.mark.parametrize(("context", "image_user", "message"), [
    ({}, "", "container has runAsNonRoot and image will run as root"),
    ({}, "0:0", "container has runAsNonRoot and image will run as root"),
    ({}, "nobody", "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is "
                   "non-root"),
    ({"runAsUser": 0}, "1000", "container's runAsUser breaks non-root policy"),
])
def test_run_as_non_root_refuses_root_and_users_it_cannot_verify(context: dict, image_user: str,
                                                                 message: str) -> None:
    pod = {"metadata": POD["metadata"], "spec": {"securityContext": {"runAsNonRoot": True, **context}}}
    with pytest.raises(RuntimeFailure) as caught:
        verify_run_as_non_root(pod, "app", effective(pod, {"name": "app"}), image_user)
    assert caught.value.reason == "CreateContainerConfigError"
    assert caught.value.message == f'{message} (pod: "web_shop(u-1)", container: app)'


@pytest.mark.parametrize(("context", "image_user"), [({}, "1000"), ({"runAsUser": 1000}, ""),
                                                     ({"runAsNonRoot": False}, "")])
def test_run_as_non_root_lets_a_non_root_user_run(context: dict, image_user: str) -> None:
    pod = {"metadata": POD["metadata"], "spec": {"securityContext": {"runAsNonRoot": True, **context}}}
    verify_run_as_non_root(pod, "app", effective(pod, {"name": "app"}), image_user)
