"""Controllers' kinds: ReplicationController, apps/v1 and batch/v1 defaults, validation and update rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kind_helpers import Obj, create, created, fields_of, resource, template, update, workload

from minik.api.errors import Cause

# -- replication controllers and apps/v1 ----------------------------------------------------------------------------

def test_a_replication_controller_takes_selector_and_labels_from_its_template() -> None:
    result = created("replicationcontrollers", {"metadata": {"name": "web"}, "spec": {"template": template()}})
    assert result["spec"]["selector"] == {"app": "web"}
    assert result["metadata"]["labels"] == {"app": "web"}
    assert result["spec"]["replicas"] == 1
    assert result["status"] == {"replicas": 0}


def test_a_replication_controller_selector_must_match_its_template() -> None:
    _, causes = create("replicationcontrollers", {"metadata": {"name": "web"},
                                                  "spec": {"selector": {"app": "db"}, "template": template()}})
    assert causes == [Cause("spec.template.metadata.labels", "FieldValueInvalid",
                            'Invalid value: map[string]string{"app":"web"}: `selector` does not match template '
                            '`labels`')]


def test_a_deployment_gets_kubernetes_defaults() -> None:
    result = created("deployments", workload("Deployment"))
    spec = result["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert spec["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == "File"
    assert "enableServiceLinks" not in spec["template"]["spec"]  # a Pod-only default
    assert result["status"] == {}


def test_a_deployment_selector_must_match_its_template_labels() -> None:
    _, causes = create("deployments", workload("Deployment", template=template({"app": "other"})))
    assert causes == [Cause("spec.template.metadata.labels", "FieldValueInvalid",
                            'Invalid value: map[string]string{"app":"other"}: `selector` does not match template '
                            '`labels`')]


def test_a_deployment_needs_a_non_empty_selector() -> None:
    body = workload("Deployment")
    del body["spec"]["selector"]
    assert create("deployments", body)[1] == [Cause("spec.selector", "FieldValueRequired", "Required value")]
    _, causes = create("deployments", workload("Deployment", selector={}))
    assert [(c.field, c.message) for c in causes] == [("spec.selector", "Invalid value: {}: empty selector is "
                                                                        "invalid for deployment")]


def test_workload_pods_must_restart_always() -> None:
    _, causes = create("deployments", workload("Deployment", template=template(restartPolicy="Never")))
    assert causes == [Cause("spec.template.spec.restartPolicy", "FieldValueNotSupported",
                            'Unsupported value: "Never": supported values: "Always"')]


def test_workload_templates_are_validated_with_their_own_paths() -> None:
    _, causes = create("statefulsets", workload("StatefulSet", template={
        "metadata": {"labels": {"app": "web", "bad key": "x"}}, "spec": {"containers": [{"name": "app"}]}}))
    assert fields_of(causes) == [("spec.template.labels", "FieldValueInvalid"),
                                 ("spec.template.spec.containers[0].image", "FieldValueRequired")]


def test_negative_replicas_and_a_standstill_rollout_are_invalid() -> None:
    _, causes = create("deployments", workload("Deployment", replicas=-1, strategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}))
    assert [(c.field, c.message) for c in causes] == [
        ("spec.strategy.rollingUpdate.maxUnavailable", "Invalid value: 0: may not be 0 when `maxSurge` is 0"),
        ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0"),
    ]


def test_a_recreate_deployment_may_not_configure_rolling_updates() -> None:
    _, causes = create("deployments", workload("Deployment", strategy={"type": "Recreate",
                                                                       "rollingUpdate": {"maxSurge": 1}}))
    assert fields_of(causes) == [("spec.strategy.rollingUpdate", "FieldValueForbidden")]


def test_the_selector_of_an_apps_workload_is_immutable() -> None:
    old = created("deployments", workload("Deployment"))
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    _, causes = update("deployments", new, old)
    assert [(c.field, c.message) for c in causes] == [
        ("spec.selector", 'Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is immutable')]


def test_a_replica_set_defaults_replicas_and_selects_on_status_replicas() -> None:
    result = created("replicasets", workload("ReplicaSet"))
    assert result["spec"]["replicas"] == 1
    assert result["status"] == {"replicas": 0}
    result["status"]["replicas"] = 3
    assert resource("replicasets").strategy.field_set(result)["status.replicas"] == "3"


def test_a_daemon_set_rolls_one_node_at_a_time_by_default() -> None:
    result = created("daemonsets", workload("DaemonSet"))
    assert result["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert result["spec"]["revisionHistoryLimit"] == 10
    _, causes = create("daemonsets", workload("DaemonSet", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}))
    assert causes == [Cause("spec.updateStrategy.rollingUpdate.maxUnavailable", "FieldValueRequired",
                            "Required value: cannot be 0 when maxSurge is 0")]


def test_a_stateful_set_gets_kubernetes_defaults() -> None:
    spec = created("statefulsets", workload("StatefulSet", serviceName="web"))["spec"]
    assert spec["replicas"] == 1
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert spec["revisionHistoryLimit"] == 10


def test_a_stateful_set_update_may_only_change_replicas_template_and_strategy() -> None:
    old = created("statefulsets", workload("StatefulSet", serviceName="web"))
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 5
    assert update("statefulsets", scaled, old)[1] == []
    renamed = copy.deepcopy(old)
    renamed["spec"]["serviceName"] = "other"
    assert update("statefulsets", renamed, old)[1] == [Cause(
        "spec", "FieldValueForbidden",
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]


# -- batch/v1 --------------------------------------------------------------------------------------------------------

def job(**spec: Any) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
            "spec": {"template": template({"app": "pi"}, restartPolicy="Never"), **spec}}


def test_a_job_gets_kubernetes_defaults_and_a_generated_selector() -> None:
    result = created("jobs", job())
    spec = result["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    assert "manualSelector" not in spec
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "uid-1"}}
    assert spec["template"]["metadata"]["labels"] == {
        "app": "pi", "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "controller-uid": "uid-1",
        "batch.kubernetes.io/controller-uid": "uid-1"}
    assert result["metadata"]["labels"] == {"app": "pi"}


def test_a_work_queue_job_keeps_completions_unset() -> None:
    spec = created("jobs", job(parallelism=3))["spec"]
    assert spec["parallelism"] == 3 and "completions" not in spec


def test_job_pods_may_not_restart_always() -> None:
    body = job()
    del body["spec"]["template"]["spec"]["restartPolicy"]
    _, causes = create("jobs", body)
    assert causes == [Cause("spec.template.spec.restartPolicy", "FieldValueNotSupported",
                            'Unsupported value: "Always": supported values: "OnFailure", "Never"')]


def test_a_manual_job_selector_must_match_its_template() -> None:
    _, causes = create("jobs", job(manualSelector=True, selector={"matchLabels": {"app": "other"}}))
    assert fields_of(causes) == [("spec.template.metadata.labels", "FieldValueInvalid")]


def test_a_job_selector_and_running_template_are_immutable() -> None:
    old = created("jobs", job())
    changed = copy.deepcopy(old)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:2"
    changed["spec"]["completions"] = 2
    assert fields_of(update("jobs", changed, old)[1]) == [("spec.completions", "FieldValueInvalid"),
                                                          ("spec.template", "FieldValueInvalid")]


def test_a_job_update_must_carry_the_generated_selector() -> None:
    old = created("jobs", job())
    resent = copy.deepcopy(old)
    del resent["spec"]["selector"]
    assert fields_of(update("jobs", resent, old)[1]) == [("spec.selector", "FieldValueRequired"),
                                                         ("spec.selector", "FieldValueInvalid")]


def test_a_suspended_job_that_never_ran_may_change_its_scheduling_directives() -> None:
    old = created("jobs", job(suspend=True))
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    new["spec"]["suspend"] = False
    assert update("jobs", new, old)[1] == []
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:2"
    assert fields_of(update("jobs", new, old)[1]) == [("spec.template", "FieldValueInvalid")]


def test_job_field_selectors_expose_successful_pods() -> None:
    obj = created("jobs", job())
    obj["status"] = {"succeeded": 2}
    assert resource("jobs").strategy.field_set(obj)["status.successful"] == "2"


def cronjob(schedule: str = "*/5 * * * *", name: str = "report", **spec: Any) -> Obj:
    return {"metadata": {"name": name}, "spec": {"schedule": schedule, "jobTemplate": {"spec": {
        "template": template(restartPolicy="OnFailure")}}, **spec}}


def test_a_cron_job_gets_kubernetes_defaults() -> None:
    spec = created("cronjobs", cronjob())["spec"]
    assert spec["concurrencyPolicy"] == "Allow" and spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


@pytest.mark.parametrize("schedule, message", [
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("*/x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
])
def test_a_cron_job_schedule_must_parse(schedule: str, message: str) -> None:
    _, causes = create("cronjobs", cronjob(schedule))
    assert causes == [Cause("spec.schedule", "FieldValueInvalid", f'Invalid value: "{schedule}": {message}')]


@pytest.mark.parametrize("schedule", ["@hourly", "@daily", "@every 1h30m", "0 0 * JAN-MAR mon-fri", "0 0 ? * *",
                                      "0,30 9-17/2 1-15 */3 *"])
def test_descriptors_names_lists_and_steps_are_valid_schedules(schedule: str) -> None:
    assert create("cronjobs", cronjob(schedule))[1] == []


def test_a_cron_job_needs_a_schedule_and_a_short_name_and_no_time_zone_in_the_schedule() -> None:
    assert fields_of(create("cronjobs", cronjob(""))[1]) == [("spec.schedule", "FieldValueRequired")]
    _, causes = create("cronjobs", cronjob("CRON_TZ=UTC 0 * * * *"))
    assert causes[0].message.endswith("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    _, causes = create("cronjobs", cronjob(name="a" * 53))
    assert causes == [Cause("metadata.name", "FieldValueInvalid",
                            f'Invalid value: "{"a" * 53}": must be no more than 52 characters')]
    assert fields_of(create("cronjobs", cronjob(timeZone="Mars/Olympus"))[1]) == [("spec.timeZone",
                                                                                  "FieldValueInvalid")]


def test_a_cron_jobs_template_may_not_choose_its_selector() -> None:
    body = cronjob()
    body["spec"]["jobTemplate"]["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    assert create("cronjobs", body)[1] == [Cause(
        "spec.jobTemplate.spec.selector", "FieldValueInvalid",
        'Invalid value: {"matchLabels":{"app":"web"}}: `selector` will be auto-generated')]


