"""People as client certificates: `minik kubeconfig --user NAME --group GROUP` on the cluster's machine prints a
kubeconfig whose certificate the API server takes as that user in those groups, with what RBAC binds to them and
nothing else; a certificate another CA signed gets no TLS session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
import yaml
from test_kubectl_https import kubectl

from minik import kubeconfig
from minik.client import Client
from minik.cluster import Cluster
from minik.pki.ca import CertificateAuthority


def minik(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minik", *args], capture_output=True, text=True, timeout=60)


async def test_a_person_gets_a_kubeconfig_of_their_own_and_what_their_bindings_grant(secure: Cluster, admin: Client,
                                                                                     tmp_path: Path) -> None:
    data_dir = secure.settings.data_dir
    kubeconfig.write(data_dir / "kubeconfig", secure.kubeconfig())  # what `minik up` writes
    made = minik("kubeconfig", "--data-dir", str(data_dir), "--user", "alice", "--group", "devs", "--group", "qa")
    assert made.returncode == 0, made.stderr
    config = yaml.safe_load(made.stdout)
    assert config["current-context"] == "alice@minik"
    assert "token" not in config["users"][0]["user"] and config["users"][0]["user"]["client-key-data"]
    path = tmp_path / "alice.kubeconfig"
    path.write_text(made.stdout)
    cache = tmp_path / "cache"
    code, out, err = await kubectl(path, cache, "auth", "whoami", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["status"]["userInfo"] == {"username": "alice",
                                                     "groups": ["devs", "qa", "system:authenticated"]}
    code, _, err = await kubectl(path, cache, "get", "pods", "-n", "default")
    assert code == 1 and 'User "alice" cannot list resource "pods"' in err
    await admin.create("rolebindings.rbac.authorization.k8s.io", {
        "metadata": {"name": "qa-view"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                     "name": "view"},
        "subjects": [{"kind": "Group", "name": "qa"}]}, "default")
    code, out, err = await kubectl(path, cache, "get", "pods", "-n", "default")
    assert code == 0, err
    async with Client.http(secure.url, None, ssl=kubeconfig.endpoint(path).ssl_context()) as client:
        assert (await client.list("pods", "default"))["items"] == []  # minik's own client presents it too


async def test_a_certificate_the_cluster_did_not_sign_is_refused(secure: Cluster, tmp_path: Path) -> None:
    stranger = CertificateAuthority.create("another-ca")
    issued = stranger.issue("kubernetes-admin", ("system:masters",), client=True)
    path = tmp_path / "forged.kubeconfig"
    assert secure.credentials is not None
    kubeconfig.write(path, kubeconfig.for_cluster("minik", secure.url, ca_data=secure.credentials.ca_pem,
                                                  client_cert=issued.cert_pem, client_key=issued.key_pem))
    context = kubeconfig.endpoint(path).ssl_context()
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):  # the handshake fails (TLS 1.3: the server closes after it)
            async with session.get(secure.url + "/api/v1/namespaces", ssl=context) as response:
                await response.read()


def test_minik_kubeconfig_refuses_a_user_in_system_masters_and_bad_names(secure: Cluster) -> None:
    data_dir = secure.settings.data_dir
    kubeconfig.write(data_dir / "kubeconfig", secure.kubeconfig())
    masters = minik("kubeconfig", "--data-dir", str(data_dir), "--user", "root", "--group", "system:masters")
    assert masters.returncode != 0 and "bind the user to cluster-admin" in masters.stderr
    bad = minik("kubeconfig", "--data-dir", str(data_dir), "--user", "a/b")
    assert bad.returncode != 0 and "invalid user name" in bad.stderr
