"""An update whose caller has already compared it with the stored object (``changed=True``): the store skips its
own no-op comparison, and nothing else about the write changes."""

from __future__ import annotations

import pytest

from minik.store import Conflict, Store


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns1"}, "spec": dict(spec)}


async def test_an_update_said_to_change_the_object_needs_the_revision_it_was_compared_at(store: Store) -> None:
    first = await store.create("/core/pods/ns1/a", pod("a"))
    with pytest.raises(ValueError):
        await store.update("/core/pods/ns1/a", pod("a", x=1), changed=True)
    second = await store.update("/core/pods/ns1/a", pod("a", x=1), expected_revision=first.mod_revision,
                                changed=True)
    assert second.mod_revision == first.mod_revision + 1 and second.object()["spec"] == {"x": 1}
    with pytest.raises(Conflict):  # the compare-and-swap still holds
        await store.update("/core/pods/ns1/a", pod("a", x=2), expected_revision=first.mod_revision, changed=True)


async def test_an_update_not_said_to_change_anything_is_still_checked_for_a_no_op(store: Store) -> None:
    first = await store.create("/core/pods/ns1/a", pod("a", x=1))
    same = await store.update("/core/pods/ns1/a", pod("a", x=1), expected_revision=first.mod_revision)
    assert same.mod_revision == first.mod_revision == store.revision
