"""The store's state keeps its keys in order lazily; every range read sees exactly the keys a sorted map would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from minik.store.records import Record
from minik.store.state import State

KEYS = st.sampled_from([f"/pods/ns{n}/p{m}" for n in (1, 10, 2) for m in range(6)] + ["/pods/", "/pods0"])
OPERATIONS = st.lists(st.tuples(st.sampled_from(["set", "pop", "range", "count"]), KEYS, KEYS), max_size=80)


def record(key: str, revision: int) -> Record:
    return Record(key, b"{}", revision, revision)


@settings(max_examples=300, deadline=None)
@given(OPERATIONS)
def test_every_range_read_sees_the_keys_in_order_as_a_sorted_map_would(operations: list) -> None:
    state, reference = State(), SortedDict()
    for revision, (operation, key, other) in enumerate(operations, 1):
        low, high = min(key, other), max(key, other)
        if operation == "set":
            state[key] = reference[key] = record(key, revision)
        elif operation == "pop":
            assert state.pop(key) == reference.pop(key, None)
        elif operation == "range":
            assert list(state.irange(low, high, (True, False))) == list(reference.irange(low, high, (True, False)))
        else:
            assert state.bisect_left(high) - state.bisect_right(low) == \
                reference.bisect_left(high) - reference.bisect_right(low)
        assert len(state) == len(reference) and all(state.get(k) == reference.get(k) for k in reference)


def test_a_key_written_again_keeps_one_place_in_the_order() -> None:
    state = State()
    state["/a"] = record("/a", 1)
    state["/a"] = record("/a", 2)
    state["/b"] = record("/b", 3)
    assert list(state.irange("/", "/z")) == ["/a", "/b"]
    state["/a"] = record("/a", 4)  # already in order: not added twice
    assert list(state.irange("/", "/z")) == ["/a", "/b"] and state["/a"].mod_revision == 4
