"""A CRD with conversion Webhook: the API server posts ConversionReviews (apiextensions.k8s.io/v1) to a real HTTPS
webhook it trusts by the CRD's caBundle, reached by url or through a Service's endpoints, and objects come back in
the version each request asks for while they are stored in the storage version."""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from minik.pki.ca import CertificateAuthority
from tests.crds import CRDS, GROUP, create_and_wait

Obj = dict[str, Any]


def _convert(obj: Obj, wanted: str) -> Obj:
    """v1 calls it color, v1beta1 colour."""
    spec = dict(obj.get("spec") or {})
    if wanted.endswith("/v1") and "colour" in spec:
        spec["color"] = spec.pop("colour")
    if wanted.endswith("/v1beta1") and "color" in spec:
        spec["colour"] = spec.pop("color")
    return {**obj, "apiVersion": wanted, "spec": spec}


class Webhook:
    def __init__(self) -> None:
        self.reviews: list[Obj] = []
        self.ca = CertificateAuthority.create("webhook-ca")
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        review = orjson.loads(await request.read())
        self.reviews.append(review)
        wanted = review["request"]["desiredAPIVersion"]
        converted = [_convert(obj, wanted) for obj in review["request"]["objects"]]
        return web.json_response({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                                  "response": {"uid": review["request"]["uid"], "convertedObjects": converted,
                                               "result": {"status": "Success"}}})

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[Webhook]:
    hook = Webhook()
    issued = hook.ca.issue("convert", names=("127.0.0.1", "convert.default.svc"), server=True)
    (tmp_path / "tls.crt").write_bytes(issued.cert_pem)
    (tmp_path / "tls.key").write_bytes(issued.key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    app = web.Application()
    app.router.add_post("/convert", hook.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    hook.url = f"https://127.0.0.1:{port}/convert"
    try:
        yield hook
    finally:
        await runner.cleanup()


def converter_crd(client_config: Obj) -> Obj:
    def version(name: str, field: str, storage: bool) -> Obj:
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {field: {"type": "string"}}}}}}}

    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"paints.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "paints", "kind": "Paint"},
                     "versions": [version("v1beta1", "colour", False), version("v1", "color", True)],
                     "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": client_config,
                                                                       "conversionReviewVersions": ["v1"]}}}}


async def exercise(http: Any, cluster: Any, webhook: Webhook) -> None:
    paints = f"/apis/{GROUP}/v1beta1/namespaces/default/paints"
    status, created = await http.post(paints, {"apiVersion": f"{GROUP}/v1beta1", "kind": "Paint",
                                               "metadata": {"name": "p"}, "spec": {"colour": "teal"}})
    assert status == 201, created
    assert created["apiVersion"] == f"{GROUP}/v1beta1" and created["spec"] == {"colour": "teal"}
    stored = cluster.store.get(f"/{GROUP}/paints/default/p").object()
    assert stored["apiVersion"] == f"{GROUP}/v1" and stored["spec"] == {"color": "teal"}
    status, got = await http.get(f"/apis/{GROUP}/v1/namespaces/default/paints/p")
    assert got["spec"] == {"color": "teal"}  # the storage version: nothing to convert
    status, listed = await http.get(paints)
    assert [item["spec"] for item in listed["items"]] == [{"colour": "teal"}]
    status, patched = await http.patch(f"{paints}/p", {"spec": {"colour": "navy"}})
    assert status == 200 and patched["spec"] == {"colour": "navy"}
    assert cluster.store.get(f"/{GROUP}/paints/default/p").object()["spec"] == {"color": "navy"}
    review = webhook.reviews[0]
    assert (review["apiVersion"], review["kind"]) == ("apiextensions.k8s.io/v1", "ConversionReview")
    assert review["request"]["desiredAPIVersion"] == f"{GROUP}/v1"


async def test_a_conversion_webhook_by_url_converts_between_served_and_stored_versions(http, cluster,
                                                                                        webhook: Webhook) -> None:
    await create_and_wait(http, converter_crd({"url": webhook.url, "caBundle": webhook.ca_bundle}))
    await exercise(http, cluster, webhook)


async def test_a_conversion_webhook_by_service_is_reached_through_its_endpoints(http, cluster,
                                                                                webhook: Webhook) -> None:
    port = int(webhook.url.rsplit(":", 1)[1].split("/")[0])
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "convert"},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "convert"},
                 "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port}]}]}
    assert (await http.post("/api/v1/namespaces/default/services", service))[0] == 201
    assert (await http.post("/api/v1/namespaces/default/endpoints", endpoints))[0] == 201
    config = {"service": {"namespace": "default", "name": "convert", "path": "/convert"},
              "caBundle": webhook.ca_bundle}
    await create_and_wait(http, converter_crd(config))
    await exercise(http, cluster, webhook)


async def test_a_webhook_whose_certificate_the_ca_bundle_does_not_sign_is_refused(http, webhook: Webhook) -> None:
    other = CertificateAuthority.create("someone-else")
    await create_and_wait(http, converter_crd({"url": webhook.url,
                                               "caBundle": base64.b64encode(other.cert_pem).decode()}))
    status, body = await http.post(f"/apis/{GROUP}/v1beta1/namespaces/default/paints", {
        "apiVersion": f"{GROUP}/v1beta1", "kind": "Paint", "metadata": {"name": "p"}, "spec": {"colour": "red"}})
    assert status == 500 and "conversion webhook for example.com/v1beta1, Kind=Paint failed" in body["message"]
    assert "tls: failed to verify certificate: x509: certificate signed by unknown authority" in body["message"]
    assert not webhook.reviews
    status, _ = await http.get(CRDS + f"/paints.{GROUP}")
    assert status == 200
