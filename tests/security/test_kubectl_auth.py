"""Real kubectl against an HTTPS cluster for what access control adds: `kubectl auth whoami`, `kubectl auth can-i`
(one question and `--list`), `kubectl create token`, `kubectl create role|rolebinding`, and a Helm-style bundle of
service account, roles, bindings and workload applied in one `kubectl apply -f dir/`."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import orjson
import yaml
from security_helpers import connect
from test_kubectl_https import kubectl

from minik import kubeconfig
from minik.apiserver.auth.credentials import mint
from minik.apiserver.request import User
from minik.cluster import Cluster


def config_for(cluster: Cluster, tmp_path: Path, token: str, name: str) -> Path:
    assert cluster.credentials is not None
    path = tmp_path / f"{name}.kubeconfig"
    kubeconfig.write(path, kubeconfig.for_cluster("minik", cluster.url, ca_data=cluster.credentials.ca_pem,
                                                  token=token))
    return path


async def test_kubectl_auth_whoami_names_the_user_and_groups(secure: Cluster, tmp_path: Path) -> None:
    config = config_for(secure, tmp_path, mint(secure.tokens, User("alice", ("devs",))), "alice")
    code, out, err = await kubectl(config, tmp_path / "cache", "auth", "whoami", "-o", "json")
    assert code == 0, err
    info = json.loads(out)
    assert info["kind"] == "SelfSubjectReview"
    assert info["status"]["userInfo"] == {"username": "alice", "groups": ["devs", "system:authenticated"]}


async def test_kubectl_auth_can_i_answers_from_rbac(secure: Cluster, tmp_path: Path) -> None:
    admin = config_for(secure, tmp_path, secure.admin_token or "", "admin")
    alice = config_for(secure, tmp_path, mint(secure.tokens, User("alice")), "alice")
    cache = tmp_path / "cache"
    code, out, _ = await kubectl(alice, cache, "auth", "can-i", "list", "pods", "-n", "default")
    assert (code, out.strip()) == (1, "no")
    code, out, err = await kubectl(admin, cache, "create", "rolebinding", "alice-view", "--clusterrole=view",
                                   "--user=alice", "-n", "default")
    assert code == 0, err
    assert out.strip() == "rolebinding.rbac.authorization.k8s.io/alice-view created"
    code, out, _ = await kubectl(alice, cache, "auth", "can-i", "list", "pods", "-n", "default")
    assert (code, out.strip()) == (0, "yes")
    code, out, _ = await kubectl(alice, cache, "auth", "can-i", "create", "pods/exec", "-n", "default")
    assert (code, out.strip()) == (1, "no")
    code, out, _ = await kubectl(admin, cache, "auth", "can-i", "list", "pods", "-n", "default", "--as", "alice")
    assert (code, out.strip()) == (0, "yes")
    code, out, _ = await kubectl(admin, cache, "auth", "can-i", "list", "pods", "-n", "default", "--as", "bob")
    assert (code, out.strip()) == (1, "no")  # the admin asks as bob, who holds nothing
    code, out, err = await kubectl(alice, cache, "auth", "can-i", "--list", "-n", "default")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0][:2] == ["Resources", "Non-Resource"]
    assert ["pods", "[]", "[]", "[get", "list", "watch]"] in rows
    assert any(row[0] == "selfsubjectaccessreviews.authorization.k8s.io" for row in rows)
    assert not any(row[0] == "secrets" for row in rows)


async def test_kubectl_create_token_issues_a_token_the_cluster_accepts(secure: Cluster, tmp_path: Path) -> None:
    admin = config_for(secure, tmp_path, secure.admin_token or "", "admin")
    cache = tmp_path / "cache"
    assert (await kubectl(admin, cache, "create", "serviceaccount", "robot", "-n", "default"))[0] == 0
    code, out, err = await kubectl(admin, cache, "create", "token", "robot", "-n", "default", "--duration", "20m",
                                   "--audience", "https://kubernetes.default.svc.cluster.local")
    assert code == 0, err
    token = out.strip()
    claims = orjson.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["sub"] == "system:serviceaccount:default:robot"
    assert claims["exp"] - claims["iat"] == 1200
    robot = config_for(secure, tmp_path, token, "robot")
    code, out, _ = await kubectl(robot, cache, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert (code, out) == (0, "system:serviceaccount:default:robot")
    code, _, err = await kubectl(robot, cache, "get", "pods", "-n", "default")
    assert code == 1 and "forbidden" in err
    code, _, err = await kubectl(admin, cache, "create", "token", "robot", "-n", "default", "--duration", "1m")
    assert code == 1 and "may not specify a duration less than 10 minutes" in err
    assert (await kubectl(admin, cache, "delete", "serviceaccount", "robot", "-n", "default"))[0] == 0
    code, _, err = await kubectl(robot, cache, "auth", "whoami")
    assert code == 1 and "Unauthorized" in err  # the account is gone, and so is its token


def bundle() -> list[dict]:
    labels = {"app": "shop"}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "shop", "namespace": "default"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "shop", "namespace": "default"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "shop", "namespace": "default"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "shop"},
         "subjects": [{"kind": "ServiceAccount", "name": "shop", "namespace": "default"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "shop-nodes"},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "shop-nodes"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "shop-nodes"},
         "subjects": [{"kind": "ServiceAccount", "name": "shop", "namespace": "default"}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop", "namespace": "default"},
         "data": {"greeting": "hello"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop", "namespace": "default"},
         "data": {"password": base64.b64encode(b"s3cret").decode()}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop", "namespace": "default"},
         "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "default"},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {"serviceAccountName": "shop",
                      "containers": [{"name": "shop", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}},
    ]


async def test_a_helm_style_bundle_applies_in_one_kubectl_apply(secure: Cluster, tmp_path: Path) -> None:
    directory = tmp_path / "chart"
    directory.mkdir()
    for i, obj in enumerate(bundle()):
        (directory / f"{i:02d}-{obj['kind'].lower()}.yaml").write_text(yaml.safe_dump(obj))
    admin = config_for(secure, tmp_path, secure.admin_token or "", "admin")
    code, out, err = await kubectl(admin, tmp_path / "cache", "apply", "-f", str(directory))
    assert code == 0, err
    assert sorted(out.split("\n")[:-1]) == sorted([
        "serviceaccount/shop created", "role.rbac.authorization.k8s.io/shop created",
        "rolebinding.rbac.authorization.k8s.io/shop created", "clusterrole.rbac.authorization.k8s.io/shop-nodes created",
        "clusterrolebinding.rbac.authorization.k8s.io/shop-nodes created", "configmap/shop created",
        "secret/shop created", "service/shop created", "deployment.apps/shop created"])
    code, out, err = await kubectl(admin, tmp_path / "cache", "get", "rolebinding", "shop", "-n", "default",
                                   "-o", "wide")
    assert code == 0, err
    header, row = out.splitlines()
    assert header.split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert row.split()[:2] == ["shop", "Role/shop"] and row.split()[-1] == "default/shop"
    shop = User("system:serviceaccount:default:shop", ("system:serviceaccounts", "system:serviceaccounts:default"))
    async with connect(secure, mint(secure.tokens, shop)) as client:
        assert (await client.get("configmaps", "shop", "default"))["data"] == {"greeting": "hello"}
        assert len((await client.list("nodes"))["items"]) == 0
    code, out, err = await kubectl(admin, tmp_path / "cache", "apply", "-f", str(directory))
    assert code == 0 and all(line.endswith("unchanged") for line in out.splitlines()), out + err
