"""Every identity against every verb on a pod's subresources, on an HTTPS cluster whose local node runs the pod on
real Docker, as an attacker would try them: exec, attach, portforward, proxy, log, binding, eviction, status and
ephemeralcontainers, and a service's proxy.

What each identity may do is Kubernetes' answer for its roles (the bootstrap policy, the Node authorizer and
NodeRestriction). Adding ephemeral containers is in no built-in role but cluster-admin (and the garbage collector's
patch on everything), as in Kubernetes: it bypasses what admission checked of the pod. A refusal must be a 403 (401
for anonymous); an allowed request must get past authorization (it may still fail for other reasons: a subresource
minik does not serve yet is a 404 for those allowed to ask)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from security_helpers import make_token, raw
from test_kubectl_https import kubectl

from minik import kubeconfig
from minik.apiserver.auth.credentials import mint
from minik.apiserver.request import User
from tests.e2e.kubectl_helpers import KUBECTL
from tests.kubelet.docker_helpers import BUSYBOX, NODE, DockerNode, busybox, docker_cluster
from tests.kubelet.helpers import phase, pod_manifest, wait_for_pod

POD = "/api/v1/namespaces/default/pods/target"
EDIT_BINDING = {"metadata": {"name": "editors"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"kind": "User", "name": "editor"},
                             {"kind": "ServiceAccount", "name": "deployer", "namespace": "default"}]}

#: (name, method, path suffix, body)
OPERATIONS: list[tuple[str, str, str, Any]] = [
    ("log", "GET", "/log", None),
    ("exec", "GET", "/exec?command=id&stdout=true", None),
    ("exec", "POST", "/exec?command=id&stdout=true", None),
    ("attach", "GET", "/attach?stdout=true", None),
    ("attach", "POST", "/attach?stdout=true", None),
    ("portforward", "GET", "/portforward?ports=80", None),
    ("proxy", "GET", "/proxy/", None),
    ("binding", "POST", "/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "target"},
                                     "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}),
    ("eviction", "POST", "/eviction", {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "target"},
                                       "deleteOptions": {"dryRun": ["All"]}}),
    ("status", "PATCH", "/status?dryRun=All", {"status": {"conditions": [{"type": "Hacked", "status": "True"}]}}),
    ("ephemeralcontainers", "GET", "/ephemeralcontainers", None),
    ("ephemeralcontainers", "PATCH", "/ephemeralcontainers?dryRun=All", {"spec": {"ephemeralContainers": [
        {"name": "intruder", "image": BUSYBOX, "targetContainerName": "app", "stdin": True, "tty": True}]}}),
]
#: (name, method, path, body) on a service's subresources (the service need not exist: an allowed request is a 404)
SERVICE = "/api/v1/namespaces/default/services/target:80"
SERVICE_OPERATIONS: list[tuple[str, str, str, Any]] = [
    ("services/proxy", "GET", "/proxy/", None),
    ("services/proxy", "POST", "/proxy/", None),
    ("services/proxy", "DELETE", "/proxy/x", None),
]
EVERYTHING = {(name, method) for name, method, _, _ in OPERATIONS + SERVICE_OPERATIONS}
EDIT = {("log", "GET"), ("exec", "GET"), ("exec", "POST"), ("attach", "GET"), ("attach", "POST"),
        ("portforward", "GET"), ("proxy", "GET"), ("eviction", "POST"), ("services/proxy", "GET"),
        ("services/proxy", "POST"), ("services/proxy", "DELETE")}

#: identity -> what it may do (everything else must be refused)
EXPECTED: dict[str, set[tuple[str, str]]] = {
    "admin": EVERYTHING,
    "view token": {("log", "GET")},
    "editor": EDIT,
    "service account with edit": EDIT,
    "the pod's node": {("eviction", "POST"), ("status", "PATCH")},
    "another node": set(),
    "join token": set(),
    "scheduler": {("binding", "POST"), ("status", "PATCH")},
    "proxy": set(),
    # get, patch and update on '*' cover subresources, as in Kubernetes; exec, attach and port-forward need create
    "a garbage collector": {("log", "GET"), ("proxy", "GET"), ("status", "PATCH"), ("services/proxy", "GET"),
                            ("services/proxy", "DELETE"), ("ephemeralcontainers", "GET"),
                            ("ephemeralcontainers", "PATCH")},  # its role deletes anything, as Kubernetes' does
    "a user with no bindings": set(),
    "anonymous": set(),
}


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[DockerNode]:
    async with docker_cluster(tmp_path / "cluster") as node:
        await node.client.create("pods", pod_manifest("target", node=NODE, containers=[
            busybox("app", "echo the secret is in the env; exec sleep 3600", env=[{"name": "PASSWORD",
                                                                                  "value": "hunter2"}])]))
        await wait_for_pod(node.client, "target", lambda p: phase(p) == "Running", 60)
        yield node


async def identities(node: DockerNode) -> dict[str, str | None]:
    cluster, admin = node.cluster, node.client
    await admin.create("rolebindings.rbac.authorization.k8s.io", EDIT_BINDING, "default")
    await admin.create("serviceaccounts", {"metadata": {"name": "deployer"}}, "default")
    answer = await admin._call("POST", admin.path("serviceaccounts", "default", "deployer", "token"), {},
                               {"spec": {}}, "application/json")
    return {
        "admin": cluster.admin_token,
        "view token": await make_token(admin, "view"),
        "editor": mint(cluster.tokens, User("editor")),
        "service account with edit": answer["status"]["token"],
        "the pod's node": mint(cluster.tokens, User(f"system:node:{NODE}", ("system:nodes",))),
        "another node": mint(cluster.tokens, User("system:node:elsewhere", ("system:nodes",))),
        "join token": await make_token(admin, "node"),
        "scheduler": mint(cluster.tokens, User("system:kube-scheduler")),
        "proxy": mint(cluster.tokens, User("system:kube-proxy")),
        "a garbage collector": mint(cluster.tokens, User("system:serviceaccount:kube-system:generic-garbage-collector",
                                                         ("system:serviceaccounts",))),
        "a user with no bindings": mint(cluster.tokens, User("nobody")),
        "anonymous": None,
    }


async def test_every_identity_gets_exactly_its_subresources_of_a_running_pod(node: DockerNode) -> None:
    tokens = await identities(node)
    wrong: list[str] = []
    for who, token in tokens.items():
        for name, method, path, body in [(n, m, POD + p, b) for n, m, p, b in OPERATIONS] + \
                [(n, m, SERVICE + p, b) for n, m, p, b in SERVICE_OPERATIONS]:
            status, answer, _ = await raw(node.cluster, method, path, token,
                                          **({"json": body} if body is not None else {}),
                                          **({"headers": {"Content-Type": "application/merge-patch+json"}}
                                             if method == "PATCH" else {}))
            allowed = (name, method) in EXPECTED[who]
            refusal = 401 if token is None else 403
            if (allowed and status in (401, 403)) or (not allowed and status != refusal):
                wrong.append(f"{who}: {method} {name} -> {status} {answer.get('message', '')[:120]}")
    assert not wrong, "\n".join(wrong)
    pod = await node.client.get("pods", "target", "default")
    assert pod["metadata"].get("deletionTimestamp") is None and "ephemeralContainers" not in pod["spec"]


async def test_a_view_token_cannot_exec_into_a_pod_with_kubectl(node: DockerNode, tmp_path: Path) -> None:
    """The escalation as it was reported: `kubectl --token=$VT exec POD -- id` answered uid=0."""
    assert KUBECTL is not None and node.cluster.credentials is not None
    config = tmp_path / "kubeconfig"
    kubeconfig.write(config, kubeconfig.for_cluster("minik", node.cluster.url,
                                                    ca_data=node.cluster.credentials.ca_pem,
                                                    token=node.cluster.admin_token))
    cache = tmp_path / "cache"
    code, out, err = await kubectl(config, cache, "exec", "target", "--", "id")
    assert (code, out.split()[0]) == (0, "uid=0(root)"), err  # exec works, for those allowed it
    view = await make_token(node.client, "view")
    code, out, err = await kubectl(config, cache, "--token", view, "exec", "target", "--", "sh", "-c",
                                   "echo $PASSWORD")
    assert code == 1 and "hunter2" not in out
    assert 'pods "target" is forbidden: User "system:bootstrap:' in err and 'resource "pods/exec"' in err, err
    code, out, err = await kubectl(config, cache, "--token", view, "logs", "target")
    assert (code, out) == (0, "the secret is in the env\n"), err  # what view may read, it reads
