"""Real kubectl with the general-purpose kinds of the API: PodTemplates, events.k8s.io Events, RuntimeClasses,
APIServices and CertificateSigningRequests (get with Kubernetes' columns, and the commands kubectl has for
them)."""

from __future__ import annotations

TEMPLATE = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "web"},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}


async def test_pod_templates_list_with_containers_images_and_pod_labels(kubectl) -> None:
    await kubectl("apply", "-f", kubectl.manifest("template.yaml", TEMPLATE))
    listed = await kubectl("get", "podtemplates")
    assert listed.rows == [["NAME", "CONTAINERS", "IMAGES", "POD LABELS"], ["web", "app", "nginx:1.27", "app=web"]]
