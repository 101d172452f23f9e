"""PodDisruptionBudgets (policy/v1) through a real API server: Kubernetes' validation of minAvailable and
maxUnavailable, selector and unhealthyPodEvictionPolicy; the zero status a new budget starts with; the status
subresource; and the columns `kubectl get pdb` shows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from minik.apiserver import printers

NOW = 1_700_000_000.0
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def pdb(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, **spec}}


def causes(body: dict[str, Any]) -> dict[str, str]:
    return {c["field"]: c["message"] for c in body["details"]["causes"]}


async def test_discovery_serves_poddisruptionbudgets_with_the_short_name_pdb_and_a_status(http) -> None:
    _, doc = await http.get("/apis/policy/v1")
    entries = {r["name"]: r for r in doc["resources"]}
    assert entries["poddisruptionbudgets"]["shortNames"] == ["pdb"]
    assert entries["poddisruptionbudgets"]["namespaced"] is True
    assert "poddisruptionbudgets/status" in entries


async def test_a_new_budget_starts_with_a_zero_status_and_generation_one(http) -> None:
    status, created = await http.post(PDBS, {**pdb("web", minAvailable=2),
                                             "status": {"disruptionsAllowed": 5}})
    assert status == 201, created
    assert created["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                                 "expectedPods": 0}
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 2}


async def test_numbers_and_percentages_are_accepted_for_either_budget(http) -> None:
    for name, spec in (("a", {"minAvailable": 0}), ("b", {"minAvailable": "50%"}), ("c", {"maxUnavailable": 1}),
                       ("d", {"maxUnavailable": "100%"}), ("e", {})):
        status, body = await http.post(PDBS, pdb(name, **spec))
        assert status == 201, body


async def test_min_available_and_max_unavailable_cannot_both_be_set(http) -> None:
    status, body = await http.post(PDBS, pdb("web", minAvailable=1, maxUnavailable=1))
    assert status == 422 and body["reason"] == "Invalid"
    assert causes(body)["spec"].endswith("minAvailable and maxUnavailable cannot be both set")


async def test_negative_numbers_bad_percentages_and_more_than_100_percent_are_invalid(http) -> None:
    status, body = await http.post(PDBS, pdb("neg", minAvailable=-1))
    assert status == 422 and causes(body) == {
        "spec.minAvailable": "Invalid value: -1: must be greater than or equal to 0"}
    status, body = await http.post(PDBS, pdb("pct", maxUnavailable="half"))
    assert status == 422 and causes(body)["spec.maxUnavailable"].startswith(
        'Invalid value: "half": a valid percent string must be a numeric string followed by an ending \'%\'')
    status, body = await http.post(PDBS, pdb("big", minAvailable="150%"))
    assert status == 422 and causes(body) == {
        "spec.minAvailable": 'Invalid value: "150%": must not be greater than 100%'}


async def test_an_unknown_unhealthy_pod_eviction_policy_is_not_supported(http) -> None:
    status, body = await http.post(PDBS, pdb("web", minAvailable=1, unhealthyPodEvictionPolicy="Sometimes"))
    assert status == 422
    assert causes(body) == {"spec.unhealthyPodEvictionPolicy": 'Unsupported value: "Sometimes": supported values: '
                                                               '"AlwaysAllow", "IfHealthyBudget"'}
    for policy in ("AlwaysAllow", "IfHealthyBudget"):
        status, body = await http.post(PDBS, pdb(policy.lower(), minAvailable=1, unhealthyPodEvictionPolicy=policy))
        assert status == 201, body


async def test_a_bad_selector_is_invalid(http) -> None:
    status, body = await http.post(PDBS, pdb("web", minAvailable=1, selector={
        "matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}))
    assert status == 422 and "spec.selector.matchExpressions[0].operator" in causes(body)


async def test_spec_changes_bump_the_generation_and_keep_the_status(http) -> None:
    await http.post(PDBS, pdb("web", minAvailable=1))
    status, patched = await http.patch(f"{PDBS}/web", {"spec": {"minAvailable": 2}, "status": {"expectedPods": 9}})
    assert status == 200, patched
    assert patched["metadata"]["generation"] == 2 and patched["status"]["expectedPods"] == 0


async def test_the_status_subresource_writes_status_only_and_refuses_negative_counts(http) -> None:
    await http.post(PDBS, pdb("web", minAvailable=1))
    _, current = await http.get(f"{PDBS}/web")
    written = {**current, "spec": {"minAvailable": 7},
               "status": {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2,
                          "observedGeneration": 1}}
    status, body = await http.put(f"{PDBS}/web/status", written)
    assert status == 200, body
    assert body["status"]["disruptionsAllowed"] == 1 and body["spec"]["minAvailable"] == 1
    status, body = await http.put(f"{PDBS}/web/status", {**body, "status": {**body["status"], "currentHealthy": -1}})
    assert status == 422 and causes(body) == {
        "status.currentHealthy": "Invalid value: -1: must be greater than or equal to 0"}


def test_the_table_shows_min_available_max_unavailable_and_allowed_disruptions() -> None:
    printer = printers.printer_for("PodDisruptionBudget")
    assert [c["name"] for c in printer.columns()] == ["Name", "Min Available", "Max Unavailable",
                                                     "Allowed Disruptions", "Age"]
    created = datetime.fromtimestamp(NOW - 90, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    budget = {**pdb("web", minAvailable="50%"), "status": {"disruptionsAllowed": 2}}
    budget["metadata"]["creationTimestamp"] = created
    assert printer.cells(budget, NOW)[0] == ["web", "50%", "N/A", 2, "90s"]
    assert printer.cells({**pdb("db", maxUnavailable=1), "metadata": {"name": "db"}}, NOW)[0] == \
        ["db", "N/A", "1", 0, "<unknown>"]
