"""A small kopf operator, as its authors would write it for any Kubernetes cluster: a Website (ops.minik.test/v1,
its CRD in website-crd.yaml) becomes a Deployment of its image that the Website owns, with as many replicas as the
Website asks for; the Website's status says which Deployment serves it. Deleting a Website needs nothing of the
operator but a last word: the garbage collector removes the owned Deployment.

Run it as `kopf run --namespace=NS website_operator.py` with a kubeconfig in KUBECONFIG. WEBSITE_PEERING_LIFETIME
(seconds) sets how long this operator's keep-alives in its peering object last (kopf's default: 60), and so how
often it renews them."""

from __future__ import annotations

import os
from typing import Any

import kopf
import kubernetes

GROUP = "ops.minik.test"
VERSION = "v1"
PLURAL = "websites"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.peering.lifetime = int(os.environ.get("WEBSITE_PEERING_LIFETIME", "60"))
    kubernetes.config.load_kube_config()


def apps() -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api()


def deployment_for(name: str, spec: kopf.Spec) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "web", "image": spec["image"],
                                         "ports": [{"containerPort": 80, "name": "http"}]}]},
            },
        },
    }


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_deployment(spec: kopf.Spec, name: str, namespace: str, body: kopf.Body, patch: kopf.Patch,
                      **_: Any) -> dict[str, Any]:
    deployment = deployment_for(name, spec)
    kopf.adopt(deployment, owner=body)
    apps().create_namespaced_deployment(namespace, deployment)
    kopf.info(body, reason="DeploymentCreated", message=f"Deployment {name} serves this website")
    patch.status["deployment"] = name
    patch.status["replicas"] = deployment["spec"]["replicas"]
    return {"deployment": name}


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec.replicas")
def scale_deployment(new: int | None, name: str, namespace: str, patch: kopf.Patch, **_: Any) -> None:
    replicas = 1 if new is None else new
    apps().patch_namespaced_deployment(name, namespace, {"spec": {"replicas": replicas}})
    patch.status["replicas"] = replicas


@kopf.on.delete(GROUP, VERSION, PLURAL)
def farewell(name: str, logger: kopf.Logger, **_: Any) -> None:
    logger.info(f"website {name} is going; the garbage collector takes its Deployment")
