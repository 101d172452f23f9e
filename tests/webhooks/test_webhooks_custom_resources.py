"""Admission webhooks see custom resources as any other kind: a rule naming a CRD's group and resource matches its
objects (in the version of the request), a mutating webhook's patch is stored, a validating one refuses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hooks import MUTATING, VALIDATING, configure, hook
from webhook_server import WebhookServer, add_label, deny

from tests.crds import GROUP, create_and_wait, widget, widget_crd, widgets

if TYPE_CHECKING:
    from conftest import ApiHttp

WIDGETS = {"operations": ["CREATE"], "apiGroups": [GROUP], "apiVersions": ["*"], "resources": ["widgets"]}


async def test_webhooks_match_mutate_and_refuse_custom_resources(http: ApiHttp, webhook: WebhookServer) -> None:
    await create_and_wait(http, widget_crd())
    webhook.on("/mutate", add_label("checked", "yes"))
    webhook.on("/validate", deny("no purple widgets"))
    await configure(http, MUTATING, "labeller", hook("label.example.com", webhook.client_config("/mutate"), WIDGETS))
    status, created = await http.post(widgets(version="v1beta1"), widget("w", "v1beta1", color="red"))
    assert status == 201, created
    assert created["metadata"]["labels"] == {"checked": "yes"}
    [review] = webhook.calls("/mutate")
    assert review["kind"] == {"group": GROUP, "version": "v1beta1", "kind": "Widget"}
    assert review["resource"] == {"group": GROUP, "version": "v1beta1", "resource": "widgets"}
    assert review["object"]["apiVersion"] == f"{GROUP}/v1beta1"
    await configure(http, VALIDATING, "guard", hook("guard.example.com", webhook.client_config("/validate"), WIDGETS))
    status, body = await http.post(widgets(), widget("p", color="blue"))
    assert (status, body["message"]) == (403, 'admission webhook "guard.example.com" denied the request: no purple '
                                              "widgets")
    status, _ = await http.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "untouched"}})
    assert status == 201
