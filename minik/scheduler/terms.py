"""Inter-pod affinity terms, compiled once per pod (kube-scheduler's framework.AffinityTerm).

A PodAffinityTerm selects pods by labels (``labelSelector``, plus ``matchLabelKeys`` / ``mismatchLabelKeys``
taken from the pod's own labels) in some namespaces: those listed, those whose labels ``namespaceSelector``
matches (``{}`` is every namespace), or, when neither is given, the pod's own namespace. ``topologyKey`` names the
node label whose value is the domain (a node, a zone...) the term is about.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minik.api.selectors import IN, NOT_IN, LabelSelector, Requirement, selector_from_dict

if TYPE_CHECKING:
    from minik.scheduler.framework import PodInfo

Obj = dict[str, Any]
NOTHING = LabelSelector.nothing()
_NOTHING = NOTHING


def _selector(value: Any) -> LabelSelector:
    """A label selector from the API; one the API server should have refused selects nothing."""
    try:
        return selector_from_dict(value)
    except ValueError:
        return _NOTHING


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    topology_key: str
    weight: int = 0
    """For preferred terms: the term's weight (1-100); 0 for required terms."""

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` (whose namespace carries ``namespace_labels``) is one of the pods the term selects."""
        return (pod.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels)) and \
            self.selector.matches(pod.labels)


def compile_term(term: Mapping[str, Any], namespace: str, labels: Mapping[str, str], weight: int = 0
                 ) -> AffinityTerm:
    selector = _selector(term.get("labelSelector"))
    extra: list[Requirement] = []
    for key in term.get("matchLabelKeys") or []:
        if key in labels:
            extra.append(Requirement(key, IN, (labels[key],)))
    for key in term.get("mismatchLabelKeys") or []:
        if key in labels:
            extra.append(Requirement(key, NOT_IN, (labels[key],)))
    if extra and selector != _NOTHING:
        selector = LabelSelector([*selector.requirements, *extra])
    listed = term.get("namespaces") or []
    namespace_selector = term.get("namespaceSelector")
    namespaces = frozenset(listed) if listed or namespace_selector is not None else frozenset((namespace,))
    return AffinityTerm(selector, namespaces, _selector(namespace_selector), str(term.get("topologyKey") or ""),
                        weight)


def compile_required(terms: list[Obj], namespace: str, labels: Mapping[str, str]) -> tuple[AffinityTerm, ...]:
    return tuple(compile_term(t, namespace, labels) for t in terms if isinstance(t, Mapping))


def compile_preferred(terms: list[Obj], namespace: str, labels: Mapping[str, str]) -> tuple[AffinityTerm, ...]:
    """Weighted terms; a weight of 0 counts for nothing and is dropped."""
    compiled = []
    for weighted in terms:
        if not isinstance(weighted, Mapping):
            continue
        weight = weighted.get("weight") or 0
        term = weighted.get("podAffinityTerm")
        if isinstance(weight, int) and weight and isinstance(term, Mapping):
            compiled.append(compile_term(term, namespace, labels, weight))
    return tuple(compiled)
