"""Job syncs against known caches (sample-controller style): the API calls one sync makes."""

from __future__ import annotations

from typing import Any

from objects import T0, job, pod

from minik.api.timestamps import rfc3339
from minik.controllers.job import JobController
from minik.controllers.jobutil import COMPLETION_INDEX, TRACKING_FINALIZER
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

KEY = "default/pi"


class Harness:
    """A JobController on static caches; ``refresh`` moves what the client now holds into the caches, as the
    informers would."""

    def __init__(self, j: dict, pods: list[dict], clock: FakeClock | None = None) -> None:
        self.client = RecordingClient([j, *pods])
        self.factory = StaticInformerFactory(self.client, {"jobs": [j], "pods": pods})
        self.clock = clock or FakeClock(T0 + 100)
        self.controller = JobController(self.client, self.factory, clock=self.clock)
        self.events: list[tuple[str, str, str]] = []
        self.controller.event = lambda obj, t, r, m: self.events.append((t, r, m))  # type: ignore[method-assign]

    async def sync(self) -> None:
        await self.controller.sync(KEY)

    def refresh(self) -> None:
        for resource in ("jobs", "pods"):
            informer = self.factory.static(resource)
            for key in informer.keys():
                informer.remove(informer.get(key))  # type: ignore[arg-type]
            for (plural, _, _), obj in self.client.objects.items():
                if plural == resource:
                    informer.put(obj)
        self.client.actions.clear()

    @property
    def status(self) -> dict[str, Any]:
        return self.client.stored("jobs", "pi", "default")["status"]  # type: ignore[index]

    def conditions(self) -> dict[str, tuple[str, str]]:
        return {c["type"]: (c["status"], c.get("reason", "")) for c in self.status.get("conditions") or []}


def job_pod(j: dict, name: str, phase: str, **kw: Any) -> dict:
    labels = j["spec"]["template"]["metadata"]["labels"]
    return pod(name, labels=labels, owner=j, node_name="n1", phase=phase, finalizers=[TRACKING_FINALIZER], **kw)


async def test_a_job_creates_parallelism_pods_with_the_tracking_finalizer() -> None:
    j = job("pi", completions=5, parallelism=2)
    h = Harness(j, [])
    await h.sync()
    created = [a.body for a in h.client.writes("create", "pods")]
    assert len(created) == 2
    for p in created:
        assert p["metadata"]["finalizers"] == [TRACKING_FINALIZER]
        assert p["metadata"]["generateName"] == "pi-"
        assert p["metadata"]["ownerReferences"][0]["uid"] == j["metadata"]["uid"]
    assert h.status == {"startTime": rfc3339(T0 + 100), "active": 2, "ready": 0, "terminating": 0,
                        "uncountedTerminatedPods": {}}


async def test_a_finished_pod_is_counted_once_through_uncounted_terminated_pods() -> None:
    j = job("pi", completions=2, parallelism=1)
    done = job_pod(j, "pi-1", "Succeeded")
    h = Harness(j, [done])
    await h.sync()
    writes = [(a.verb, a.resource) for a in h.client.writes()]
    assert writes == [("create", "pods"), ("update_status", "jobs"), ("patch", "pods"), ("update_status", "jobs")]
    first, last = [a.body["status"] for a in h.client.writes("update_status")]
    assert first["uncountedTerminatedPods"] == {"succeeded": [done["metadata"]["uid"]]} and "succeeded" not in first
    assert last["uncountedTerminatedPods"] == {} and last["succeeded"] == 1
    assert TRACKING_FINALIZER not in h.client.stored("pods", "pi-1", "default")["metadata"].get("finalizers", [])
    h.refresh()
    await h.sync()  # the next sync does not count it again
    assert h.status["succeeded"] == 1


async def test_reaching_the_completions_adds_success_criteria_met_then_complete() -> None:
    j = job("pi", completions=1)
    h = Harness(j, [job_pod(j, "pi-1", "Succeeded")])
    await h.sync()
    assert h.conditions() == {"SuccessCriteriaMet": ("True", "CompletionsReached"),
                              "Complete": ("True", "CompletionsReached")}
    assert h.status["completionTime"] == rfc3339(T0 + 100) and h.status["succeeded"] == 1
    assert ("Normal", "Completed", "Job completed") in h.events


async def test_failures_beyond_the_backoff_limit_fail_the_job_once_its_pods_are_gone() -> None:
    j = job("pi", completions=3, parallelism=1, backoffLimit=1)
    pods = [job_pod(j, "pi-1", "Failed"), job_pod(j, "pi-2", "Failed"), job_pod(j, "pi-3", "Running")]
    h = Harness(j, pods)
    await h.sync()
    deleted = h.client.writes("delete", "pods")
    assert [a.name for a in deleted] == ["pi-3"]
    assert h.conditions() == {"FailureTarget": ("True", "BackoffLimitExceeded")}  # pi-3 is still terminating
    h.refresh()  # the kubelet is done with pi-3: it is gone
    assert h.client.stored("pods", "pi-3", "default") is None
    await h.sync()
    assert h.conditions() == {"FailureTarget": ("True", "BackoffLimitExceeded"),
                              "Failed": ("True", "BackoffLimitExceeded")}
    assert h.status["failed"] == 3 and "completionTime" not in h.status
    assert ("Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit") in h.events


async def test_a_failed_pod_is_replaced_only_after_the_back_off() -> None:
    j = job("pi", completions=1, backoffLimit=6)
    failed = job_pod(j, "pi-1", "Failed")
    failed["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 1,
                                                                        "finishedAt": rfc3339(T0 + 98)}}
    h = Harness(j, [failed])
    await h.sync()
    assert not h.client.writes("create", "pods") and h.status["failed"] == 1
    h.refresh()
    h.clock.step(5)  # 7 s after the failure: still within the first 10 s
    await h.sync()
    assert not h.client.writes("create", "pods")
    h.clock.step(5)
    await h.sync()
    assert len(h.client.writes("create", "pods")) == 1


async def test_with_restart_policy_on_failure_container_restarts_count_against_the_backoff_limit() -> None:
    j = job("pi", backoffLimit=2)
    j["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    h = Harness(j, [job_pod(j, "pi-1", "Running", restarts=2)])
    await h.sync()
    assert h.conditions()["FailureTarget"] == ("True", "BackoffLimitExceeded")
    assert [a.name for a in h.client.writes("delete", "pods")] == ["pi-1"]


async def test_an_indexed_job_gives_each_pod_its_index() -> None:
    j = job("pi", completions=3, parallelism=3, completionMode="Indexed")
    h = Harness(j, [])
    await h.sync()
    created = sorted((a.body for a in h.client.writes("create", "pods")),
                     key=lambda p: p["metadata"]["annotations"][COMPLETION_INDEX])
    for index, p in enumerate(created):
        assert p["metadata"]["annotations"][COMPLETION_INDEX] == str(index)
        assert p["metadata"]["labels"][COMPLETION_INDEX] == str(index)
        assert p["metadata"]["generateName"] == f"pi-{index}-"
        assert p["spec"]["hostname"] == f"pi-{index}"
        assert p["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]


async def test_completed_indexes_are_reported_as_intervals_and_missing_ones_run() -> None:
    j = job("pi", completions=6, parallelism=2, completionMode="Indexed")
    pods = [job_pod(j, f"pi-{i}", "Succeeded", annotations={COMPLETION_INDEX: str(i)}) for i in (0, 1, 2, 4)]
    h = Harness(j, pods)
    await h.sync()
    assert h.status["completedIndexes"] == "0-2,4" and h.status["succeeded"] == 4
    created = sorted(a.body["metadata"]["annotations"][COMPLETION_INDEX] for a in h.client.writes("create", "pods"))
    assert created == ["3", "5"]


async def test_a_suspended_job_deletes_its_pods_without_counting_them_and_says_so() -> None:
    j = job("pi", completions=4, parallelism=2, suspend=True)
    j["status"] = {"startTime": rfc3339(T0), "active": 2}
    h = Harness(j, [job_pod(j, "pi-1", "Running"), job_pod(j, "pi-2", "Running")])
    await h.sync()
    assert sorted(a.name for a in h.client.writes("delete", "pods")) == ["pi-1", "pi-2"]
    assert len(h.client.writes("patch", "pods")) == 2  # finalizers off first: not failures
    assert h.conditions() == {"Suspended": ("True", "JobSuspended")}
    assert "failed" not in h.status and h.status["terminating"] == 2
    assert ("Normal", "Suspended", "Job suspended") in h.events


async def test_a_job_active_longer_than_its_deadline_fails() -> None:
    j = job("pi", activeDeadlineSeconds=10)
    j["status"] = {"startTime": rfc3339(T0)}
    h = Harness(j, [])
    await h.sync()
    assert h.conditions() == {"FailureTarget": ("True", "DeadlineExceeded"), "Failed": ("True", "DeadlineExceeded")}
    assert not h.client.writes("create", "pods")


async def test_a_pod_whose_job_is_gone_loses_the_tracking_finalizer() -> None:
    j = job("gone")
    orphan = job_pod(j, "gone-1", "Running")
    h = Harness(job("pi"), [orphan])
    await h.controller.sync("pod:default/gone-1")
    [patch] = h.client.writes("patch", "pods")
    assert patch.name == "gone-1" and patch.body[-1] == {"op": "replace", "path": "/metadata/finalizers", "value": []}
