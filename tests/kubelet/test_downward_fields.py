"""The downward API's field paths as the kubelet reads them for env values (fieldRef)."""

from __future__ import annotations

from minik.kubelet.containers import field_value

POD = {"metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"},
                    "annotations": {"example.com/owner": "team-a"}}, "spec": {"nodeName": "n1"}}


def test_a_label_or_annotation_is_read_by_its_subscripted_path() -> None:
    assert field_value(POD, "metadata.labels['app']", "10.0.0.2", "192.0.2.1") == "web"
    assert field_value(POD, "metadata.annotations['example.com/owner']", "", "") == "team-a"
    assert field_value(POD, "metadata.name", "", "") == "web"


def test_a_subscripted_path_with_a_trailing_newline_reads_nothing() -> None:
    assert field_value(POD, "metadata.labels['app']\n", "10.0.0.2", "192.0.2.1") == ""
