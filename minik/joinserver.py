"""The server side of a node join: the anonymous ``kube-public/cluster-info`` ConfigMap a joining node reads the
CA from (as kubeadm publishes it), and ``POST /minik/v1/nodecredentials``, where a node-role bootstrap token is
exchanged for the node's own credential.

The request (``NodeCredentialRequest``) names the node and may carry a PEM certificate request for the
kubelet's serving certificate (CN ``system:node:NAME``, O ``system:nodes``, the node's addresses as
subjectAltNames); the answer (``NodeCredential``, 201) holds the node's token (identity ``system:node:NAME``),
the signed serving certificate and the CA.

A join token is never handed a node name that is taken (409 AlreadyExists, the message saying how to free it):
the cluster's own nodes (the local node of `minik up`, even before its Node is written, and its simulated
nodes), a name with a credential, a name with a Node object. Otherwise whoever holds a join token could act as
a node that runs: read the Secrets of its pods, receive their logs and exec (the API server relays them to the
endpoint the impostor writes into the Node), post mirror pods the real kubelet then runs. Checks and issue
happen under one lock, so two joins cannot both take a free name.

An admin (``system:masters``) may issue a credential for a name whose Node exists: a node whose credential was
revoked (a lost disk, a rotation) gets a new one and keeps its Node, with its pods, labels and taints; deleting
the Node first would have its pods deleted with it. An admin too must revoke the old credential first, and the
cluster's own nodes are never issued one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
import structlog
import yaml

from minik import kubeconfig
from minik.api import tokens
from minik.api.errors import Cause, StatusError, already_exists, bad_request, forbidden, invalid
from minik.api.validation import is_dns1123_subdomain
from minik.apiserver.auth.authn import is_anonymous
from minik.apiserver.auth.authz import is_admin
from minik.apiserver.auth.rbac.policy import JOIN_TOKENS as JOIN_GROUP
from minik.apiserver.request import ApiRequest, ApiResponse, User
from minik.client import Client

if TYPE_CHECKING:
    from minik.pki.ca import CertificateAuthority, Issued

log = structlog.get_logger("minik.joinserver")

Obj = dict[str, Any]

PATH = "/minik/v1/nodecredentials"
API_VERSION = "minik.io/v1"
CLUSTER_INFO_NAMESPACE = "kube-public"
CLUSTER_INFO_NAME = "cluster-info"


def cluster_info(server: str, ca_pem: bytes) -> Obj:
    """The ConfigMap kubeadm publishes for discovery: a kubeconfig with the server and the CA, no credentials."""
    config = kubeconfig.for_cluster("", server, ca_data=ca_pem)
    config = {"apiVersion": "v1", "kind": "Config", "clusters": config["clusters"], "contexts": [], "users": [],
              "current-context": "", "preferences": {}}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CLUSTER_INFO_NAME, "namespace": CLUSTER_INFO_NAMESPACE},
            "data": {"kubeconfig": yaml.safe_dump(config, sort_keys=False)}}


async def publish_cluster_info(client: Client, server: str, ca_pem: bytes) -> None:
    """Create or bring up to date kube-public/cluster-info (what an anonymous joining node may read)."""
    wanted = cluster_info(server, ca_pem)
    try:
        current = await client.get("configmaps", CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE)
    except StatusError as exc:
        if exc.code != 404:
            raise
        await client.create("configmaps", wanted, CLUSTER_INFO_NAMESPACE)
        return
    if current.get("data") != wanted["data"]:
        await client.patch("configmaps", CLUSTER_INFO_NAME, {"data": wanted["data"]}, CLUSTER_INFO_NAMESPACE)


def _forbidden(user: User) -> StatusError:
    return forbidden(f'User "{user.name}" cannot create path "{PATH}"')


class JoinServer:
    """Handles ``POST /minik/v1/nodecredentials`` with the API server's own client (identity system:apiserver)."""

    def __init__(self, client: Client, ca: Callable[[], CertificateAuthority],
                 own_nodes: frozenset[str] = frozenset()) -> None:
        """``ca`` gives the cluster CA with its key (read when the first join comes); ``own_nodes`` are the names
        of the nodes the cluster runs itself (``minik.kubelet.component.own_node_names``)."""
        self.client = client
        self.ca = ca
        self.own_nodes = own_nodes
        self._issuing = asyncio.Lock()

    async def handle(self, request: ApiRequest, user: User) -> ApiResponse:
        if is_anonymous(user):
            raise StatusError(401, "Unauthorized", "Unauthorized")
        if request.method != "POST":
            raise StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                              f"resource ({request.method})")
        if not (JOIN_GROUP in user.groups or is_admin(user)):
            raise _forbidden(user)
        try:
            body = orjson.loads(request.body or b"null")
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"the request body is not JSON: {exc}") from None
        if not isinstance(body, dict) or body.get("kind") != "NodeCredentialRequest":
            raise bad_request('expected a NodeCredentialRequest ({"kind": "NodeCredentialRequest", "nodeName": '
                              '...})')
        node = body.get("nodeName")
        causes = []
        if not isinstance(node, str) or not node:
            causes.append(Cause("nodeName", "FieldValueRequired", "Required value"))
        else:
            causes += [Cause("nodeName", "FieldValueInvalid", f'Invalid value: "{node}": {m}')
                       for m in is_dns1123_subdomain(node)]
        csr = body.get("servingCertificateRequest")
        if csr is not None and not isinstance(csr, str):
            causes.append(Cause("servingCertificateRequest", "FieldValueInvalid", "must be a PEM string"))
        if causes:
            raise invalid("NodeCredentialRequest", "minik.io", str(node or ""), causes)
        assert isinstance(node, str)
        serving = self._sign(node, csr) if csr else None
        async with self._issuing:
            await self._check_free(node, is_admin(user))
            token = tokens.new_node_token()
            await self.client.create("secrets", tokens.node_credential_secret(token, node), tokens.NAMESPACE)
        log.info("node credential issued", node=node, by=user.name, token_id=token.split(".")[0])
        answer: Obj = {"kind": "NodeCredential", "apiVersion": API_VERSION, "nodeName": node,
                       "user": tokens.NODE_USER_PREFIX + node, "groups": [tokens.NODES], "token": token,
                       "caCertificate": self.ca().cert_pem.decode()}
        if serving is not None:
            answer["servingCertificate"] = serving.cert_pem.decode()
        return ApiResponse.json(answer, 201)

    def _sign(self, node: str, csr: str) -> Issued:
        from minik.pki.ca import CertificateError

        try:
            return self.ca().sign_request(csr.encode(), tokens.NODE_USER_PREFIX + node, (tokens.NODES,), server=True)
        except CertificateError as exc:
            raise invalid("NodeCredentialRequest", "minik.io", node, [
                Cause("servingCertificateRequest", "FieldValueInvalid", str(exc))]) from None

    async def _check_free(self, node: str, admin: bool) -> None:
        """409 unless ``node`` may be issued a credential: not one of the cluster's own nodes, no credential, and
        (unless an admin asks) no Node object."""
        if node in self.own_nodes:
            raise _taken(node, "it is a node this cluster runs itself (the node of `minik up`): join this machine "
                               "under another --name, or start the cluster with --node-name OTHER or --disable node")
        existing = await self.client.list("secrets", tokens.NAMESPACE,
                                          field_selector=f"type={tokens.NODE_CREDENTIAL_TYPE}")
        for item in existing.get("items") or []:
            credential = tokens.read_node_credential_secret(item)
            if credential is not None and credential.node == node:
                also = "" if admin else f" and delete its Node if there is one (`minik delete node {node}`)"
                raise _taken(node, f"the node has a credential already (id {credential.id}): to join it again, "
                                   f"revoke it with `minik token delete {credential.id}`{also}")
        if admin:
            return
        try:
            await self.client.get("nodes", node)
        except StatusError as exc:
            if exc.code == 404:
                return
            raise
        raise _taken(node, f"a Node of this name exists: to join a machine under this name, delete the Node "
                           f"(`minik delete node {node}`) and its credential if it has one (`minik token list`, "
                           "`minik token delete ID`)")


def _taken(node: str, why: str) -> StatusError:
    err = already_exists("nodecredentials", "minik.io", node)
    err.message += f"; {why}"
    return err
