"""Admission webhooks called by a real API server over HTTPS: a real webhook server (webhook_server.py) with a
certificate a test CA signed, configurations written through the API, and requests whose answers show what the
webhooks did."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from hooks import CM, MUTATING, PODS, VALIDATING, configmap, configure, hook
from webhook_server import WebhookServer, add_label, allow, deny, free_port, slow

from minik.api.resources import REGISTRY
from minik.cluster import Cluster

if TYPE_CHECKING:
    from conftest import ApiHttp


async def test_a_mutating_webhook_adds_a_label_to_the_object_stored(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/mutate", add_label("team", "blue"))
    await configure(http, MUTATING, "labeller", hook("label.example.com", webhook.client_config("/mutate")))
    status, created = await http.post(CM, configmap("a", data="1"))
    assert status == 201, created
    assert created["metadata"]["labels"] == {"team": "blue"}
    status, stored = await http.get(f"{CM}/a")
    assert stored["metadata"]["labels"] == {"team": "blue"}
    [review] = webhook.calls("/mutate")
    assert review["operation"] == "CREATE" and review["namespace"] == "default" and review["name"] == "a"
    assert review["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert review["resource"] == review["requestResource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert review["object"]["data"] == {"data": "1"} and review["oldObject"] is None
    assert review["userInfo"] == {"username": "kubernetes-admin", "groups": ["system:masters",
                                                                         "system:authenticated"]}
    assert review["dryRun"] is False and review["options"]["kind"] == "CreateOptions"
    assert review["_query"] == {"timeout": "10s"} and review["_apiVersion"] == "admission.k8s.io/v1"


async def test_a_validating_webhook_refuses_an_object_with_its_message(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/validate", deny("configmaps named bad are not allowed"))
    await configure(http, VALIDATING, "guard", hook("guard.example.com", webhook.client_config("/validate")))
    status, body = await http.post(CM, configmap("bad"))
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == 'admission webhook "guard.example.com" denied the request: configmaps named bad are ' \
                              "not allowed"
    assert (await http.get(f"{CM}/bad"))[0] == 404


async def test_a_refusal_without_a_code_is_a_400_without_explanation(http: ApiHttp, webhook: WebhookServer) -> None:
    async def refuse(request: dict) -> dict:
        return {"allowed": False}
    webhook.on("/validate", refuse)
    await configure(http, VALIDATING, "guard", hook("guard.example.com", webhook.client_config("/validate")))
    status, body = await http.post(CM, configmap("x"))
    assert (status, body["message"]) == (400, 'admission webhook "guard.example.com" denied the request without '
                                              "explanation")


async def test_an_unreachable_webhook_that_fails_closed_refuses_with_kubernetes_message(http: ApiHttp) -> None:
    port = free_port()
    await configure(http, VALIDATING, "down", hook("down.example.com", {"url": f"https://127.0.0.1:{port}/v"},
                                                   failurePolicy="Fail"))
    status, body = await http.post(CM, configmap("x"))
    assert (status, body["reason"]) == (500, "InternalError")
    assert body["message"] == (f'Internal error occurred: failed calling webhook "down.example.com": failed to call '
                               f'webhook: Post "https://127.0.0.1:{port}/v?timeout=10s": dial tcp 127.0.0.1:{port}: '
                               f"connect: connection refused")


async def test_an_unreachable_webhook_that_fails_open_lets_the_request_through(http: ApiHttp) -> None:
    port = free_port()
    await configure(http, MUTATING, "down", hook("down.example.com", {"url": f"https://127.0.0.1:{port}/m"},
                                                 failurePolicy="Ignore"))
    await configure(http, VALIDATING, "down", hook("down.example.com", {"url": f"https://127.0.0.1:{port}/v"},
                                                   failurePolicy="Ignore"))
    assert (await http.post(CM, configmap("x")))[0] == 201


async def test_a_slow_webhook_times_out_with_its_failure_policy_and_never_hangs(http: ApiHttp,
                                                                              webhook: WebhookServer) -> None:
    webhook.on("/slow", slow(30))
    await configure(http, VALIDATING, "slow", hook("slow.example.com", webhook.client_config("/slow"),
                                                   timeoutSeconds=1, failurePolicy="Fail"))
    began = time.monotonic()
    status, body = await http.post(CM, configmap("x"))
    assert time.monotonic() - began < 5
    assert status == 500
    assert body["message"] == (f'Internal error occurred: failed calling webhook "slow.example.com": failed to call '
                               f'webhook: Post "{webhook.url("/slow")}?timeout=1s": context deadline exceeded')
    status, config = await http.get(f"{VALIDATING}/slow")
    config["webhooks"][0]["failurePolicy"] = "Ignore"
    assert (await http.put(f"{VALIDATING}/slow", config))[0] == 200
    began = time.monotonic()
    assert (await http.post(CM, configmap("y")))[0] == 201
    assert time.monotonic() - began < 5


async def test_a_webhook_call_does_not_hold_up_other_requests(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/slow", slow(30))
    await configure(http, VALIDATING, "slow", hook("slow.example.com", webhook.client_config("/slow"),
                                                   timeoutSeconds=3, failurePolicy="Ignore"))
    pending = asyncio.ensure_future(http.post(CM, configmap("waits")))
    while not webhook.calls("/slow"):
        await asyncio.sleep(0.01)
    began = time.monotonic()
    for i in range(5):
        assert (await http.get("/api/v1/namespaces/default"))[0] == 200
        assert (await http.post("/api/v1/namespaces/default/secrets", {"metadata": {"name": f"s{i}"}}))[0] == 201
    assert time.monotonic() - began < 1.5
    assert not pending.done()
    assert (await pending)[0] == 201


async def test_a_certificate_the_ca_bundle_does_not_trust_is_a_call_failure(http: ApiHttp,
                                                                            webhook: WebhookServer) -> None:
    webhook.on("/v", allow())
    await configure(http, VALIDATING, "untrusted", hook("untrusted.example.com", {"url": webhook.url("/v")}))
    status, body = await http.post(CM, configmap("x"))
    assert status == 500
    assert body["message"].endswith(": tls: failed to verify certificate: x509: certificate signed by unknown "
                                    "authority")
    assert not webhook.calls("/v")


async def test_mutating_webhooks_run_before_validating_ones_which_see_the_mutated_object(
        http: ApiHttp, webhook: WebhookServer) -> None:
    order: list[str] = []
    label = add_label("checked", "yes")

    async def mutate(request: dict) -> dict:
        order.append("mutating")
        return await label(request)

    async def validate(request: dict) -> dict:
        order.append("validating")
        labels = request["object"]["metadata"].get("labels") or {}
        return {"allowed": labels.get("checked") == "yes", "status": {"message": "not labelled"}}

    webhook.on("/m", mutate)
    webhook.on("/v", validate)
    # configured validating first: the chain's order, not the configurations', decides
    await configure(http, VALIDATING, "check", hook("check.example.com", webhook.client_config("/v")))
    await configure(http, MUTATING, "label", hook("label.example.com", webhook.client_config("/m")))
    status, created = await http.post(CM, configmap("x"))
    assert status == 201, created
    assert order == ["mutating", "validating"]
    assert webhook.calls("/v")[0]["object"]["metadata"]["uid"] == created["metadata"]["uid"]


async def test_mutating_webhooks_are_called_in_the_order_of_their_configurations_names(
        http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/first", add_label("first", "1"))

    async def second(request: dict) -> dict:
        assert request["object"]["metadata"]["labels"] == {"first": "1"}
        return await add_label("second", "2")(request)
    webhook.on("/second", second)
    await configure(http, MUTATING, "b-second", hook("second.example.com", webhook.client_config("/second")))
    await configure(http, MUTATING, "a-first", hook("first.example.com", webhook.client_config("/first")))
    status, created = await http.post(CM, configmap("x"))
    assert (status, created["metadata"]["labels"]) == (201, {"first": "1", "second": "2"})


async def test_validating_webhooks_run_in_parallel(http: ApiHttp, webhook: WebhookServer) -> None:
    for name in ("a", "b", "c"):
        webhook.on(f"/{name}", slow(1))
    await configure(http, VALIDATING, "three", *(hook(f"{n}.example.com", webhook.client_config(f"/{n}"),
                                                      timeoutSeconds=5) for n in ("a", "b", "c")))
    began = time.monotonic()
    assert (await http.post(CM, configmap("x")))[0] == 201
    assert time.monotonic() - began < 2.5


async def test_an_if_needed_webhook_is_called_again_when_a_later_one_changed_the_object(
        http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/first", allow())
    webhook.on("/never", allow())
    webhook.on("/changer", add_label("changed", "true"))
    await configure(http, MUTATING, "a", hook("first.example.com", webhook.client_config("/first"),
                                              reinvocationPolicy="IfNeeded"),
                    hook("never.example.com", webhook.client_config("/never")))
    await configure(http, MUTATING, "b", hook("changer.example.com", webhook.client_config("/changer")))
    assert (await http.post(CM, configmap("x")))[0] == 201
    first = webhook.calls("/first")
    assert len(first) == 2 and len(webhook.calls("/never")) == 1 and len(webhook.calls("/changer")) == 1
    assert first[1]["object"]["metadata"]["labels"] == {"changed": "true"}
    webhook.on("/changer", allow())  # nothing changes: nobody is called again
    assert (await http.post(CM, configmap("y")))[0] == 201
    assert len(webhook.calls("/first")) == 3


async def test_rules_select_operations_resources_and_subresources(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/v", allow())
    status_only = {"operations": ["UPDATE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods/status"]}
    await configure(http, VALIDATING, "rules", hook("rules.example.com", webhook.client_config("/v"), PODS,
                                                    status_only))
    assert (await http.post(CM, configmap("x")))[0] == 201
    assert not webhook.calls("/v")
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    status, created = await http.post("/api/v1/namespaces/default/pods", pod)
    assert status == 201
    assert [c["operation"] for c in webhook.calls("/v")] == ["CREATE"]
    assert (await http.patch("/api/v1/namespaces/default/pods/p", {"metadata": {"labels": {"a": "b"}}}))[0] == 200
    assert len(webhook.calls("/v")) == 1  # an update of the pod itself is not pods/status
    status, _ = await http.patch("/api/v1/namespaces/default/pods/p/status", {"status": {"message": "hi"}})
    assert status == 200
    review = webhook.calls("/v")[-1]
    assert (review["operation"], review["subResource"], review["requestSubResource"]) == ("UPDATE", "status", "status")
    assert review["oldObject"]["metadata"]["name"] == "p"


async def test_cluster_scope_rules_match_namespaces_and_cluster_objects_only(http: ApiHttp,
                                                                            webhook: WebhookServer) -> None:
    webhook.on("/v", deny("cluster-scoped writes are closed"))
    everything = {"operations": ["CREATE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
                  "scope": "Cluster"}
    await configure(http, VALIDATING, "cluster", hook("cluster.example.com", webhook.client_config("/v"), everything))
    assert (await http.post(CM, configmap("x")))[0] == 201
    status, body = await http.post("/api/v1/namespaces", {"metadata": {"name": "fresh"}})
    assert status == 403 and "cluster-scoped writes are closed" in body["message"]
    status, body = await http.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                                   {"metadata": {"name": "high"}, "value": 10})
    assert status == 403


async def test_a_namespace_selector_matches_the_labels_of_the_request_namespace(http: ApiHttp,
                                                                               webhook: WebhookServer) -> None:
    webhook.on("/v", deny("guarded namespace"))
    assert (await http.post("/api/v1/namespaces", {"metadata": {"name": "guarded", "labels": {"guard": "on"}}}))[0] \
        == 201
    assert (await http.post("/api/v1/namespaces", {"metadata": {"name": "open"}}))[0] == 201
    rules = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps",
                                                                                               "namespaces"]}
    await configure(http, VALIDATING, "ns", hook("ns.example.com", webhook.client_config("/v"), rules,
                                                 namespaceSelector={"matchLabels": {"guard": "on"}}))
    assert (await http.post("/api/v1/namespaces/open/configmaps", configmap("x")))[0] == 201
    status, body = await http.post("/api/v1/namespaces/guarded/configmaps", configmap("x"))
    assert status == 403 and body["message"].endswith("denied the request: guarded namespace")
    # a Namespace is matched by its own labels
    assert (await http.post("/api/v1/namespaces", {"metadata": {"name": "new-open"}}))[0] == 201
    status, _ = await http.post("/api/v1/namespaces", {"metadata": {"name": "new-guarded", "labels": {"guard": "on"}}})
    assert status == 403


async def test_an_object_selector_matches_the_new_or_the_old_object_labels(http: ApiHttp,
                                                                          webhook: WebhookServer) -> None:
    webhook.on("/v", allow())
    await configure(http, VALIDATING, "obj", hook("obj.example.com", webhook.client_config("/v"),
                                                  objectSelector={"matchExpressions": [
                                                      {"key": "watched", "operator": "Exists"}]}))
    assert (await http.post(CM, configmap("plain")))[0] == 201
    assert not webhook.calls("/v")
    assert (await http.post(CM, configmap("seen", {"watched": "1"})))[0] == 201
    assert len(webhook.calls("/v")) == 1
    # removing the label is an update whose old object has it
    assert (await http.call("PATCH", f"{CM}/seen", [{"op": "remove", "path": "/metadata/labels"}],
                            content_type="application/json-patch+json"))[0] == 200
    review = webhook.calls("/v")[-1]
    assert review["operation"] == "UPDATE" and "labels" not in review["object"]["metadata"]


async def test_match_conditions_select_with_cel(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/v", deny("big configmaps need review"))
    conditions = [{"name": "big", "expression": "has(object.data) && size(object.data) > 1"},
                  {"name": "not-admin", "expression": "!('system:masters' in request.userInfo.groups) || "
                                                      "request.name != 'exempt'"}]
    await configure(http, VALIDATING, "cel", hook("cel.example.com", webhook.client_config("/v"),
                                                  matchConditions=conditions))
    assert (await http.post(CM, configmap("small", a="1")))[0] == 201
    assert (await http.post(CM, configmap("exempt", a="1", b="2")))[0] == 201
    status, body = await http.post(CM, configmap("big", a="1", b="2"))
    assert status == 403 and "big configmaps need review" in body["message"]
    assert [c["name"] for c in webhook.calls("/v")] == ["big"]


async def test_a_match_condition_that_errors_gets_the_failure_policy(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/v", allow())
    condition = [{"name": "labelled", "expression": "object.metadata.labels['team'] == 'x'"}]
    await configure(http, VALIDATING, "cel", hook("cel.example.com", webhook.client_config("/v"),
                                                  matchConditions=condition))
    status, body = await http.post(CM, configmap("x"))  # no labels: the expression errors, Fail refuses
    assert status == 500
    assert body["message"].startswith('Internal error occurred: failed calling webhook "cel.example.com": expression '
                                      "'object.metadata.labels['team'] == 'x'' resulted in error: no such key")
    status, config = await http.get(f"{VALIDATING}/cel")
    config["webhooks"][0]["failurePolicy"] = "Ignore"
    assert (await http.put(f"{VALIDATING}/cel", config))[0] == 200
    assert (await http.post(CM, configmap("y")))[0] == 201
    assert not webhook.calls("/v")


async def test_match_conditions_may_ask_the_authorizer(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/v", deny("only for those who may not delete nodes"))
    condition = [{"name": "no-node-deleters",
                  "expression": "!authorizer.group('').resource('nodes').check('delete').allowed()"}]
    await configure(http, VALIDATING, "cel", hook("cel.example.com", webhook.client_config("/v"),
                                                  matchConditions=condition))
    assert (await http.post(CM, configmap("x")))[0] == 201  # the admin may delete nodes: not called
    assert not webhook.calls("/v")


async def test_a_dry_run_calls_webhooks_without_side_effects_with_dry_run_set(http: ApiHttp,
                                                                             webhook: WebhookServer) -> None:
    webhook.on("/m", add_label("dry", "run"))
    await configure(http, MUTATING, "dry", hook("dry.example.com", webhook.client_config("/m"),
                                                sideEffects="NoneOnDryRun"))
    status, body = await http.call("POST", CM, configmap("x"), params={"dryRun": "All"})
    assert (status, body["metadata"]["labels"]) == (201, {"dry": "run"})
    [review] = webhook.calls("/m")
    assert review["dryRun"] is True and review["options"]["dryRun"] == ["All"]
    assert (await http.get(f"{CM}/x"))[0] == 404


async def test_a_dry_run_is_refused_by_a_webhook_with_side_effects(cluster: Cluster, http: ApiHttp,
                                                                   webhook: WebhookServer) -> None:
    """sideEffects Some and Unknown are refused by admissionregistration/v1 (they were v1beta1's); a configuration
    stored before still holds them: it is written here to the store as such an old one would be."""
    assert cluster.store is not None
    webhook.on("/v", allow())
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": "legacy", "uid": "1", "creationTimestamp": "2020-01-01T00:00:00Z"},
              "webhooks": [{**hook("legacy.example.com", webhook.client_config("/v")), "sideEffects": "Some",
                            "failurePolicy": "Ignore", "timeoutSeconds": 10}]}
    resource = REGISTRY.get("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    assert resource is not None
    await cluster.store.create(resource.key(None, "legacy"), config)
    status, body = await http.call("POST", CM, configmap("x"), params={"dryRun": "All"})
    assert (status, body["reason"], body["message"]) == (
        400, "BadRequest", 'admission webhook "legacy.example.com" does not support dry run')
    assert not webhook.calls("/v")
    assert (await http.post(CM, configmap("x")))[0] == 201  # a real write calls it
    assert len(webhook.calls("/v")) == 1


async def test_webhook_warnings_reach_the_client(http: ApiHttp, webhook: WebhookServer) -> None:
    webhook.on("/v", allow(warnings=["this kind of configmap is deprecated"]))
    await configure(http, VALIDATING, "warn", hook("warn.example.com", webhook.client_config("/v")))
    async with http.session.post(CM, json=configmap("x")) as response:
        assert response.status == 201
        assert response.headers["Warning"] == '299 - "this kind of configmap is deprecated"'


async def test_deletes_reach_a_webhook_with_the_old_object_and_the_delete_options(http: ApiHttp,
                                                                                 webhook: WebhookServer) -> None:
    webhook.on("/v", deny("keep it"))
    rule = {"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
    assert (await http.post(CM, configmap("x")))[0] == 201
    await configure(http, VALIDATING, "keep", hook("keep.example.com", webhook.client_config("/v"), rule))
    status, body = await http.delete(f"{CM}/x", {"propagationPolicy": "Foreground"})
    assert status == 403 and body["message"].endswith("denied the request: keep it")
    [review] = webhook.calls("/v")
    assert review["object"] is None and review["oldObject"]["metadata"]["name"] == "x"
    assert review["options"]["kind"] == "DeleteOptions" and review["options"]["propagationPolicy"] == "Foreground"


async def test_webhook_configurations_themselves_never_reach_a_webhook(http: ApiHttp, webhook: WebhookServer) -> None:
    """A broken webhook can always be removed."""
    everything = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}
    port = free_port()
    await configure(http, VALIDATING, "broken", hook("broken.example.com", {"url": f"https://127.0.0.1:{port}/"},
                                                     everything))
    assert (await http.post(CM, configmap("x")))[0] == 500
    assert (await http.delete(f"{VALIDATING}/broken"))[0] == 200
    assert (await http.post(CM, configmap("x")))[0] == 201


async def test_an_answer_that_is_no_admission_review_is_a_call_failure(http: ApiHttp, webhook: WebhookServer) -> None:
    async def garbage(request: dict) -> bytes:
        return b"not json"

    async def wrong_uid(request: dict) -> dict:
        return {"uid": "someone-else", "allowed": True}
    webhook.on("/garbage", garbage)
    webhook.on("/uid", wrong_uid)
    await configure(http, VALIDATING, "bad", hook("garbage.example.com", webhook.client_config("/garbage")))
    status, body = await http.post(CM, configmap("x"))
    assert status == 500
    assert body["message"].startswith('Internal error occurred: failed calling webhook "garbage.example.com": failed '
                                      "to call webhook: couldn't get version/kind; json parse error")
    assert (await http.delete(f"{VALIDATING}/bad"))[0] == 200
    await configure(http, VALIDATING, "uid", hook("uid.example.com", webhook.client_config("/uid")))
    status, body = await http.post(CM, configmap("x"))
    assert status == 500 and 'received invalid webhook response: expected response.uid="' in body["message"]


async def test_a_webhook_behind_a_service_is_reached_at_a_ready_endpoint(http: ApiHttp,
                                                                        webhook: WebhookServer) -> None:
    """The Service's port 443 is named https; its Endpoints give the address and the port it has there (here the
    test's server on 127.0.0.1, as a pod's IP and targetPort would be). The server's certificate names the
    service's DNS name, which is what the API server checks."""
    await webhook.stop()
    named = WebhookServer(webhook.ca, names=("hooks.default.svc",))
    await named.start()
    try:
        named.on("/label", add_label("via", "service"))
        service = {"metadata": {"name": "hooks"}, "spec": {"ports": [{"name": "https", "port": 443,
                                                                        "targetPort": named.port}]}}
        assert (await http.post("/api/v1/namespaces/default/services", service))[0] == 201
        endpoints = {"metadata": {"name": "hooks"},
                     "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https",
                                                                                 "port": named.port}]}]}
        assert (await http.post("/api/v1/namespaces/default/endpoints", endpoints))[0] == 201
        config = {"service": {"namespace": "default", "name": "hooks", "path": "/label"},
                  "caBundle": named.ca_bundle}
        await configure(http, MUTATING, "svc", hook("svc.example.com", config))
        status, created = await http.post(CM, configmap("x"))
        assert (status, created["metadata"].get("labels")) == (201, {"via": "service"}), created
        status, config_obj = await http.get(f"{MUTATING}/svc")
        assert config_obj["webhooks"][0]["clientConfig"]["service"]["port"] == 443
    finally:
        await named.stop()


async def test_a_service_without_endpoints_is_a_call_failure_in_kubernetes_words(http: ApiHttp) -> None:
    service = {"metadata": {"name": "idle"}, "spec": {"ports": [{"port": 443, "targetPort": 8443}]}}
    assert (await http.post("/api/v1/namespaces/default/services", service))[0] == 201
    await configure(http, VALIDATING, "idle", hook("idle.example.com", {"service": {"namespace": "default",
                                                                                    "name": "idle"}}))
    status, body = await http.post(CM, configmap("x"))
    assert status == 500
    assert body["message"] == ('Internal error occurred: failed calling webhook "idle.example.com": failed to call '
                               'webhook: Post "https://idle.default.svc:443?timeout=10s": no endpoints available for '
                               'service "idle"')


def test_the_webhook_plugins_close_the_admission_chain(cluster: Cluster) -> None:
    assert cluster.api is not None
    names = [plugin.name for plugin in cluster.api.admission.plugins]
    # the webhooks and policies come after every built-in step, and only the quota after them: it charges what
    # they let through, as in Kubernetes
    assert names[-4:] == ["MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
                          "ResourceQuota"]
    assert names.index("PodSecurity") < names.index("MutatingAdmissionWebhook")
