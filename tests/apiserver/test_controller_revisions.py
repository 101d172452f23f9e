"""ControllerRevisions (apps/v1) through a real API server: any JSON as data, a revision number that may not be
negative, data that never changes once written."""

from __future__ import annotations

from protobuf_wire import PROTOBUF, encode_object

REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"


def revision(name: str, number: int = 1, **extra: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": name},
            "data": {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "a"}]}}}},
            "revision": number, **extra}


async def test_a_revision_keeps_its_data_as_given(http) -> None:
    status, created = await http.post(REVISIONS, revision("web-1"))
    assert status == 201, created
    assert created["data"] == revision("web-1")["data"] and created["revision"] == 1
    status, listed = await http.get(REVISIONS)
    assert [r["metadata"]["name"] for r in listed["items"]] == ["web-1"]


async def test_a_revision_without_data_or_with_a_negative_number_is_invalid(http) -> None:
    body = revision("web-1", -1)
    del body["data"]
    status, answer = await http.post(REVISIONS, body)
    assert status == 422, answer
    causes = {(c["field"], c["reason"]) for c in answer["details"]["causes"]}
    assert causes == {("data", "FieldValueRequired"), ("revision", "FieldValueInvalid")}


async def test_the_data_is_immutable_and_the_revision_number_is_not(http) -> None:
    await http.post(REVISIONS, revision("web-1"))
    status, patched = await http.patch(f"{REVISIONS}/web-1", {"revision": 3})
    assert status == 200 and patched["revision"] == 3
    status, answer = await http.patch(f"{REVISIONS}/web-1", {"data": {"spec": {"replicas": 2}}})
    assert status == 422, answer
    assert [(c["field"], c["message"]) for c in answer["details"]["causes"]][0][0] == "data"
    assert "field is immutable" in answer["message"]


async def test_a_revision_sent_in_protobuf_is_stored_as_the_json_it_holds(http) -> None:
    body = revision("web-2", 2)
    status, created = await http.call("POST", REVISIONS, data=encode_object(body), content_type=PROTOBUF)
    assert status == 201, created
    assert created["data"] == body["data"] and created["revision"] == 2
