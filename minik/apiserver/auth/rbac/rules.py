"""RBAC's rules: what a PolicyRule grants, and whether one set of rules covers another (for escalation checks).

A rule is compiled once from its JSON into frozensets, so matching a request is a few set look-ups. The forms
Kubernetes understands: ``*`` for any verb, group, resource or URL; ``resource/subresource``, ``*/subresource``
and ``resource/*``; resourceNames (an empty list means every name); nonResourceURLs ending in ``*`` as prefixes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from minik.apiserver.authorization import AuthzAttributes

ALL = "*"


def _set(value: Any) -> frozenset[str]:
    return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()


@dataclass(frozen=True, slots=True)
class Rule:
    """A compiled PolicyRule."""

    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    names: frozenset[str]
    urls: frozenset[str]

    @classmethod
    def parse(cls, rule: Any) -> Rule:
        if not isinstance(rule, dict):
            return cls(frozenset(), frozenset(), frozenset(), frozenset(), frozenset())
        return cls(_set(rule.get("verbs")), _set(rule.get("apiGroups")), _set(rule.get("resources")),
                   _set(rule.get("resourceNames")), _set(rule.get("nonResourceURLs")))

    def to_json(self) -> dict[str, list[str]]:
        """The PolicyRule again (sorted lists; empty ones left out, as Kubernetes writes them)."""
        out: dict[str, list[str]] = {"verbs": sorted(self.verbs)}
        for key, values in (("apiGroups", self.groups), ("resources", self.resources),
                            ("resourceNames", self.names), ("nonResourceURLs", self.urls)):
            if values:
                out[key] = sorted(values)
        return out

    def allows(self, attrs: AuthzAttributes) -> bool:
        if not (attrs.verb in self.verbs or ALL in self.verbs):
            return False
        if not attrs.resource_request:
            return _url_matches(self.urls, attrs.path)
        if not (attrs.group in self.groups or ALL in self.groups):
            return False
        if not _resource_matches(self.resources, attrs.resource, attrs.subresource):
            return False
        return not self.names or attrs.name in self.names


def _resource_matches(resources: frozenset[str], resource: str, subresource: str) -> bool:
    if ALL in resources:
        return True
    if not subresource:
        return resource in resources
    return f"{resource}/{subresource}" in resources or f"*/{subresource}" in resources or \
        f"{resource}/*" in resources


def _url_matches(urls: frozenset[str], path: str) -> bool:
    if path in urls or ALL in urls:
        return True
    return any(url.endswith("*") and path.startswith(url[:-1]) for url in urls)


def compile_rules(rules: Any) -> tuple[Rule, ...]:
    """The compiled rules of a Role's or ClusterRole's ``rules`` (anything but a list of objects gives none)."""
    return tuple(Rule.parse(r) for r in rules) if isinstance(rules, list) else ()


def allows(rules: Iterable[Rule], attrs: AuthzAttributes) -> bool:
    return any(rule.allows(attrs) for rule in rules)


# -- coverage, for escalation checks -------------------------------------------------------------------------
def _breakdown(rule: Rule) -> list[Rule]:
    """A rule as rules of one verb, group, resource and name each (Kubernetes' BreakdownRule)."""
    one = frozenset
    out: list[Rule] = []
    if rule.urls:
        for verb in rule.verbs:
            for url in rule.urls:
                out.append(Rule(one([verb]), one(), one(), one(), one([url])))
        return out
    names: Sequence[str | None] = sorted(rule.names) or [None]
    for group in rule.groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                for name in names:
                    out.append(Rule(one([verb]), one([group]), one([resource]),
                                    one([name]) if name is not None else one(), one()))
    return out


def _group_covers(owner: frozenset[str], wanted: str) -> bool:
    return ALL in owner or wanted in owner


def _resource_covers(owner: frozenset[str], wanted: str) -> bool:
    if ALL in owner or wanted in owner:
        return True
    resource, slash, sub = wanted.partition("/")
    if slash:
        return f"{resource}/*" in owner or f"*/{sub}" in owner
    return False


def _url_covers(owner: frozenset[str], wanted: str) -> bool:
    if wanted in owner or ALL in owner:
        return True
    return any(url.endswith("*") and wanted.startswith(url[:-1]) for url in owner)


def _covers_one(owner: Rule, wanted: Rule) -> bool:
    """Whether ``owner`` grants everything the single-verb, single-resource rule ``wanted`` grants."""
    verb = next(iter(wanted.verbs))
    if not (ALL in owner.verbs or verb in owner.verbs):
        return False
    if wanted.urls:
        return bool(owner.urls) and _url_covers(owner.urls, next(iter(wanted.urls)))
    if not (_group_covers(owner.groups, next(iter(wanted.groups)))
            and _resource_covers(owner.resources, next(iter(wanted.resources)))):
        return False
    if not owner.names:
        return True
    return bool(wanted.names) and wanted.names <= owner.names


def uncovered(owner: Iterable[Rule], requested: Iterable[Rule]) -> list[Rule]:
    """The parts of ``requested`` (broken down to single verbs, groups, resources and names) that no rule of
    ``owner`` grants: empty when ``owner`` covers ``requested``."""
    owned = list(owner)
    missing: list[Rule] = []
    for rule in requested:
        for part in _breakdown(rule):
            if not any(_covers_one(o, part) for o in owned):
                missing.append(part)
    return missing


def describe(rule: Rule) -> str:
    """A rule as Kubernetes prints it in an escalation refusal: ``{APIGroups:["apps"], Resources:["deployments"],
    Verbs:["create"]}``."""
    def quoted(values: frozenset[str]) -> str:
        return "[" + " ".join(f'"{v}"' for v in sorted(values)) + "]"

    if rule.urls:
        return f"{{NonResourceURLs:{quoted(rule.urls)}, Verbs:{quoted(rule.verbs)}}}"
    names = f", ResourceNames:{quoted(rule.names)}" if rule.names else ""
    return f"{{APIGroups:{quoted(rule.groups)}, Resources:{quoted(rule.resources)}{names}, Verbs:{quoted(rule.verbs)}}}"
