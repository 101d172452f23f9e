"""The TokenRequest API: ``POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`` (what `kubectl create token`
and the kubelet call) answers a TokenRequest whose status holds a signed token for the service account, as
Kubernetes' serviceaccounts/token subresource does.

The request (authentication.k8s.io/v1 TokenRequest) may name audiences (default: the API server's), a lifetime
(``expirationSeconds``, default an hour, at least ten minutes) and an object to bind the token to (a Pod, a Secret
or a Node, by name and optionally uid): the token then dies with that object. A token bound to a pod also names
the pod's node, as Kubernetes' does. A node (``system:node:NAME``) gets only tokens bound to a pod running on it,
named with its uid, as Kubernetes' NodeRestriction admission requires.
"""

from __future__ import annotations

from typing import Any

import orjson

from minik.api.errors import Cause, StatusError, bad_request, conflict, forbidden, invalid, not_found
from minik.api.kinds.common import dict_at
from minik.api.timestamps import now_rfc3339, rfc3339
from minik.apiserver import codec
from minik.apiserver.admission.base import ObjectReader
from minik.apiserver.auth.nodeauthz import ANY_NODE, node_of
from minik.apiserver.auth.serviceaccounts import BoundObject, TokenIssuer
from minik.apiserver.request import ApiRequest, ApiResponse, User
from minik.apiserver.requestinfo import RequestInfo

Obj = dict[str, Any]

API_VERSION = "authentication.k8s.io/v1"
DEFAULT_SECONDS = 3600
MIN_SECONDS = 600
MAX_SECONDS = 2 ** 32
BINDABLE = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}


class TokenRequests:
    """Handles POST serviceaccounts/NAME/token."""

    def __init__(self, issuer: TokenIssuer, reader: ObjectReader) -> None:
        self.issuer = issuer
        self.reader = reader

    async def handle(self, info: RequestInfo, request: ApiRequest, user: User) -> ApiResponse:
        """A create of serviceaccounts/NAME/token (the API server routes no other verb here)."""
        namespace, name = info.namespace or "", info.name or ""
        body = codec.decode_object(request.body, request.headers.get("Content-Type")) if request.body.strip() \
            else {}
        if body.get("kind") not in (None, "TokenRequest") or body.get("apiVersion") not in (None, API_VERSION):
            raise bad_request(f"expected a TokenRequest ({API_VERSION}), not {body.get('apiVersion')}/"
                              f"{body.get('kind')}")
        spec = dict_at(body, "spec")
        seconds, audiences, ref = self._validated(spec, name)
        account = self.reader.get("", "v1", "serviceaccounts", namespace, name)
        if account is None:
            raise not_found("serviceaccounts", "", name)
        requester = node_of(user)
        if requester is not None:
            self._restrict_node(requester, ref, namespace, name)
        bound, node = self._bound(ref, namespace)
        account_uid = str(account["metadata"].get("uid") or "")
        await self.issuer.ready()
        token, expires = self.issuer.issue(namespace, name, account_uid, audiences, seconds, bound, node)
        answer_spec: Obj = {"audiences": audiences, "expirationSeconds": seconds}
        if ref is not None:
            answer_spec["boundObjectRef"] = {**ref, "uid": bound.uid if bound else node.uid if node else ""}
        answer = {"kind": "TokenRequest", "apiVersion": API_VERSION,
                  "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_rfc3339()},
                  "spec": answer_spec, "status": {"token": token, "expirationTimestamp": rfc3339(expires)}}
        return ApiResponse(201, orjson.dumps(answer))

    def _validated(self, spec: Obj, name: str) -> tuple[int, list[str], Obj | None]:
        causes: list[Cause] = []
        seconds = spec.get("expirationSeconds", DEFAULT_SECONDS)
        if seconds is None:
            seconds = DEFAULT_SECONDS
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            causes.append(Cause("spec.expirationSeconds", "FieldValueInvalid",
                                f"Invalid value: {seconds!r}: must be an integer"))
        elif seconds < MIN_SECONDS:
            causes.append(Cause("spec.expirationSeconds", "FieldValueInvalid", f"Invalid value: {seconds}: may not "
                                "specify a duration less than 10 minutes"))
        elif seconds > MAX_SECONDS:
            causes.append(Cause("spec.expirationSeconds", "FieldValueInvalid", f"Invalid value: {seconds}: may not "
                                "specify a duration larger than 2^32 seconds"))
        audiences = spec.get("audiences") or list(self.issuer.audiences)
        if not isinstance(audiences, list) or not all(isinstance(a, str) and a for a in audiences):
            causes.append(Cause("spec.audiences", "FieldValueInvalid", "Invalid value: must be a list of strings"))
        ref = spec.get("boundObjectRef")
        if ref is not None:
            if not isinstance(ref, dict):
                causes.append(Cause("spec.boundObjectRef", "FieldValueInvalid", "Invalid value: must be an object"))
                ref = None
            else:
                kind = ref.get("kind")
                if kind not in BINDABLE:
                    causes.append(Cause("spec.boundObjectRef.kind", "FieldValueNotSupported",
                                        f'Unsupported value: "{kind}": supported values: "Node", "Pod", "Secret"'))
                if ref.get("apiVersion") not in (None, "", "v1"):
                    causes.append(Cause("spec.boundObjectRef.apiVersion", "FieldValueNotSupported",
                                        f'Unsupported value: "{ref.get("apiVersion")}": supported values: "v1"'))
                if not isinstance(ref.get("name"), str) or not ref.get("name"):
                    causes.append(Cause("spec.boundObjectRef.name", "FieldValueRequired", "Required value"))
        if causes:
            raise invalid("TokenRequest", "authentication.k8s.io", name, causes)
        assert isinstance(seconds, int)
        return seconds, list(audiences), ({"kind": ref["kind"], "apiVersion": "v1", "name": ref["name"],
                                          **({"uid": ref["uid"]} if ref.get("uid") else {})} if ref else None)

    def _restrict_node(self, requester: str, ref: Obj | None, namespace: str, name: str) -> None:
        """A node's token must be bound to a pod, by uid, that runs on that node (Kubernetes' NodeRestriction):
        a node cannot mint a free-standing token of a service account its pods use, nor one for another node's
        pod."""
        def refuse(reason: str) -> StatusError:
            return forbidden(f'serviceaccounts "{name}" is forbidden: {reason}', "serviceaccounts", "", name)

        if ref is None or ref["kind"] != "Pod":
            raise refuse("node requested token not bound to a pod")
        if not ref.get("uid"):
            raise refuse("node requested token with a pod binding without a uid")
        pod = self.reader.get("", "v1", "pods", namespace, ref["name"])
        if pod is None:
            raise not_found("pods", "", ref["name"])
        if ref["uid"] != pod["metadata"].get("uid"):
            raise refuse(f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
                         "The object might have been deleted and then recreated")
        if requester != ANY_NODE and (pod.get("spec") or {}).get("nodeName") != requester:
            raise refuse("node requested token bound to a pod scheduled on a different node")

    def _bound(self, ref: Obj | None, namespace: str) -> tuple[BoundObject | None, BoundObject | None]:
        """The object a token is bound to (Pod or Secret), and the node (the pod's, or the one named)."""
        if ref is None:
            return None, None
        kind, name = ref["kind"], ref["name"]
        plural = BINDABLE[kind]
        obj = self.reader.get("", "v1", plural, None if kind == "Node" else namespace, name)
        if obj is None:
            raise not_found(plural, "", name)
        uid = str(obj["metadata"].get("uid") or "")
        if ref.get("uid") and ref["uid"] != uid:
            raise conflict(plural, "", name, f"the UID in the bound object reference ({ref['uid']}) does not match "
                           "the UID in record. The object might have been deleted and then recreated")
        if kind == "Node":
            return None, BoundObject("Node", name, uid)
        node = None
        if kind == "Pod":
            node_name = str(dict_at(obj, "spec").get("nodeName") or "")
            node_obj = self.reader.get("", "v1", "nodes", None, node_name) if node_name else None
            if node_obj is not None:
                node = BoundObject("Node", node_name, str(node_obj["metadata"].get("uid") or ""))
        return BoundObject(kind, name, uid), node
