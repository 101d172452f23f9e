"""Pod specs seen before: their defaults, QoS class and validity are remembered, and a remembered answer is the
one working it out again would give."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minik.api.kinds import podspec, podvalidation, specmemo
from minik.api.kinds.podspec import default_pod, pod_qos_class
from minik.api.kinds.podvalidation import validate_pod_spec
from minik.api.kinds.specmemo import MAX_KEY_BYTES, SpecMemo, spec_key

Obj = dict[str, Any]


def a_pod(**spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec}}


SPECS = [
    a_pod(),
    a_pod(hostNetwork=True, containers=[{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                                         "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
    a_pod(volumes=[{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}],
          initContainers=[{"name": "i", "image": "busybox", "restartPolicy": "Always",
                           "readinessProbe": {"httpGet": {"port": 8080}}}]),
]


@pytest.fixture(autouse=True)
def fresh_memos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podspec, "_DEFAULTED", SpecMemo())
    monkeypatch.setattr(podspec, "_QOS", SpecMemo())
    monkeypatch.setattr(podvalidation, "_VALID", {})


@pytest.mark.parametrize("pod", SPECS)
def test_a_remembered_pod_gets_the_defaults_and_qos_class_working_them_out_gives(pod: Obj) -> None:
    fresh = copy.deepcopy(pod)
    podspec._default_pod(fresh["spec"])
    first, second = copy.deepcopy(pod), copy.deepcopy(pod)
    default_pod(first)
    default_pod(second)  # from the memo
    assert first == second == fresh
    assert len(podspec._DEFAULTED) == 1
    assert pod_qos_class(pod["spec"]) == pod_qos_class(pod["spec"]) == podspec._pod_qos_class(pod["spec"])


def test_each_pod_gets_its_own_copy_of_remembered_defaults() -> None:
    first, second = a_pod(), a_pod()
    default_pod(first)
    spec = second["spec"]
    default_pod(second)
    assert second["spec"] is spec  # changed in place, as without the memo
    second["spec"]["containers"][0]["image"] = "changed"
    third = a_pod()
    default_pod(third)
    assert third["spec"]["containers"][0]["image"] == "busybox:1.36"


def test_an_invalid_spec_is_not_remembered_and_is_refused_every_time() -> None:
    spec = {"containers": [{"name": "Bad_Name", "image": "busybox"}]}
    first = validate_pod_spec(spec, "spec", in_pod=True)
    assert first and first == validate_pod_spec(spec, "spec", in_pod=True)
    assert not any(podvalidation._VALID.values())


def defaulted(pod: Obj) -> Obj:
    spec = copy.deepcopy(pod["spec"])
    podspec._default_pod(spec)
    return spec


def test_a_spec_valid_in_a_pod_is_checked_again_in_a_template() -> None:
    spec = defaulted(a_pod(ephemeralContainers=[{"name": "e", "image": "x"}]))
    assert validate_pod_spec(spec, "spec", in_pod=True) == []
    causes = validate_pod_spec(spec, "spec.template.spec", in_pod=False)
    assert [c.field for c in causes] == ["spec.template.spec.ephemeralContainers"]


def test_a_valid_spec_is_remembered() -> None:
    spec = defaulted(SPECS[2])
    assert validate_pod_spec(spec, "spec", in_pod=True) == []
    key = spec_key(spec)
    assert key is not None and podvalidation._VALID[("spec", True)].get(key)
    assert validate_pod_spec(spec, "spec", in_pod=True) == []


@pytest.mark.parametrize("spec", [
    {"containers": [], "activeDeadlineSeconds": 2 ** 70},  # more than orjson writes
    ["not", "a", "spec"],
])
def test_what_json_cannot_hold_has_no_key(spec: Any) -> None:
    assert spec_key(spec) is None


@pytest.mark.parametrize("spec", [
    {"containers": [], "priority": None},  # a null: YAML's .nan is written as null too
    {"containers": [], "nodeSelector": {"k": "v" * MAX_KEY_BYTES}},
])
def test_specs_whose_json_may_not_stand_for_them_are_not_remembered(spec: Any) -> None:
    memo: SpecMemo[int] = SpecMemo()
    key = spec_key(spec)
    assert key is not None
    memo.put(key, 1)
    assert memo.get(key) is None and len(memo) == 0


def test_a_nan_from_yaml_is_defaulted_and_refused_as_without_the_memo() -> None:
    with_null, with_nan = a_pod(activeDeadlineSeconds=None), a_pod(activeDeadlineSeconds=float("nan"))
    default_pod(with_null)
    default_pod(with_nan)
    assert with_nan["spec"]["activeDeadlineSeconds"] != with_nan["spec"]["activeDeadlineSeconds"]  # still NaN
    assert [c.field for c in validate_pod_spec(with_nan["spec"], "spec", in_pod=True)] == \
        ["spec.activeDeadlineSeconds"]


def test_a_full_memo_starts_over() -> None:
    memo: SpecMemo[int] = SpecMemo(size=2)
    memo.put(b"a", 1)
    memo.put(b"b", 2)
    memo.put(b"c", 3)
    assert len(memo) == 1 and memo.get(b"c") == 3 and memo.get(b"a") is None


def test_a_memo_rests_while_specs_do_not_repeat_and_then_looks_again() -> None:
    memo: SpecMemo[int] = SpecMemo()
    for i in range(specmemo.MISSES_BEFORE_REST):
        key = memo.key({"i": i})
        assert key is not None and memo.get(key) is None
    assert all(memo.key({"i": -1}) is None for _ in range(specmemo.REST_CALLS))
    assert memo.key({"i": -1}) is not None


def test_a_found_answer_keeps_a_memo_awake() -> None:
    memo: SpecMemo[int] = SpecMemo()
    memo.put(b'{"same":1}', 1)
    for i in range(specmemo.MISSES_BEFORE_REST * 3):
        key = memo.key({"i": i} if i % 2 else {"same": 1})
        assert key is not None
        memo.get(key)
