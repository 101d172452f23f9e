"""PodTemplates through a real API server: stored with the pod spec's defaults, validated by the pod spec rules,
their generation counting template changes."""

from __future__ import annotations

TEMPLATES = "/api/v1/namespaces/default/podtemplates"


def template(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}}


async def test_a_pod_template_is_stored_with_the_pod_spec_defaults(http) -> None:
    status, created = await http.post(TEMPLATES, template("web"))
    assert status == 201, created
    spec = created["template"]["spec"]
    assert spec["restartPolicy"] == "Always" and spec["dnsPolicy"] == "ClusterFirst"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["metadata"]["generation"] == 1


async def test_an_invalid_template_is_refused_with_causes_under_template(http) -> None:
    status, body = await http.post(TEMPLATES, template("bad", restartPolicy="Sometimes", containers=[
        {"name": "App", "image": ""}]))
    assert status == 422, body
    fields = {c["field"] for c in body["details"]["causes"]}
    assert {"template.spec.restartPolicy", "template.spec.containers[0].name",
            "template.spec.containers[0].image"} <= fields
    status, body = await http.post(TEMPLATES, {"metadata": {"name": "empty"}})
    assert status == 422 and "template.spec.containers" in {c["field"] for c in body["details"]["causes"]}


async def test_changing_the_template_bumps_the_generation_and_labels_do_not(http) -> None:
    await http.post(TEMPLATES, template("web"))
    status, patched = await http.patch(f"{TEMPLATES}/web", {"metadata": {"labels": {"tier": "front"}}})
    assert status == 200 and patched["metadata"]["generation"] == 1
    status, patched = await http.patch(f"{TEMPLATES}/web", {"template": {"spec": {"terminationGracePeriodSeconds": 5}}})
    assert status == 200 and patched["metadata"]["generation"] == 2

