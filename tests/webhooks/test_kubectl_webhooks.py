"""Webhooks through real kubectl: a configuration applied from a manifest, then an object that the webhook
refuses, as kubectl prints the refusal; and the configurations as `kubectl get` lists them."""

from __future__ import annotations

from pathlib import Path

from hooks import hook
from webhook_server import WebhookServer, deny

from minik.cluster import Cluster
from tests.e2e.kubectl_helpers import Kubectl


async def test_kubectl_prints_the_refusal_of_a_webhook_it_applied(cluster: Cluster, webhook: WebhookServer,
                                                                  tmp_path: Path) -> None:
    kubectl = Kubectl(cluster, tmp_path / "kubectl")
    webhook.on("/validate", deny("configmaps must carry an owner label"))
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": "owners"},
              "webhooks": [hook("owners.example.com", webhook.client_config("/validate"))]}
    applied = await kubectl("apply", "-f", kubectl.manifest("webhook.yaml", config))
    assert applied.out.strip() == "validatingwebhookconfiguration.admissionregistration.k8s.io/owners created"
    listed = await kubectl("get", "validatingwebhookconfigurations")
    assert listed.rows[0] == ["NAME", "WEBHOOKS", "AGE"]
    assert listed.rows[1][:2] == ["owners", "1"]
    manifest = kubectl.manifest("cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}})
    refused = await kubectl("create", "-f", manifest, ok=False)
    assert refused.code == 1
    assert refused.err.strip() == (f'Error from server (Forbidden): error when creating "{manifest}": admission '
                                   'webhook "owners.example.com" denied the request: configmaps must carry an owner '
                                   "label")
    direct = await kubectl("create", "configmap", "other", ok=False)
    assert direct.err.strip() == ('error: failed to create configmap: admission webhook "owners.example.com" denied '
                                  "the request: configmaps must carry an owner label")
    await kubectl("delete", "validatingwebhookconfiguration", "owners")
    await kubectl("create", "-f", manifest)
