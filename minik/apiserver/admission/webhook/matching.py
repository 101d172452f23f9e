"""Which webhooks a request goes to: the rules (operations, API groups and versions, resources and subresources,
scope), then the namespaceSelector and the objectSelector, as Kubernetes' webhook matcher decides. The
matchConditions come after these (they need the request as the webhook would see it: minik.api.matchconditions).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from minik.api.errors import internal, not_found
from minik.api.registry import Registry
from minik.api.selectors import LabelSelector
from minik.apiserver.admission.base import Attributes, ObjectReader
from minik.apiserver.admission.webhook.config import Webhook

Obj = dict[str, Any]

@dataclass(frozen=True)
class Invocation:
    """A webhook to call for a request, and the group/version/resource and kind it asked for (the request's own,
    or for matchPolicy Equivalent an equivalent version's)."""

    webhook: Webhook
    group: str
    version: str
    resource: str
    kind: str


def _any(items: Iterable[Any], wanted: str) -> bool:
    return any(item == "*" or item == wanted for item in items)


def _resource_matches(resources: Iterable[Any], resource: str, subresource: str) -> bool:
    for item in resources:
        if not isinstance(item, str):
            continue
        res, _, sub = item.partition("/")
        if (res == "*" or res == resource) and (sub == "*" or sub == subresource):
            return True
    return False


def rule_matches(rule: Obj, attrs: Attributes, group: str, version: str) -> bool:
    """A RuleWithOperations against a request (for ``group``/``version``, which may be an equivalent's)."""
    scope = rule.get("scope") or "*"
    is_namespace = attrs.resource.plural == "namespaces" and not attrs.resource.group
    namespaced = bool(attrs.namespace) and not is_namespace
    if scope == "Namespaced" and not namespaced:
        return False
    if scope == "Cluster" and namespaced:
        return False
    return _any(rule.get("operations") or (), attrs.operation) and _any(rule.get("apiGroups") or (), group) and \
        _any(rule.get("apiVersions") or (), version) and \
        _resource_matches(rule.get("resources") or (), attrs.resource.plural, attrs.subresource or "")


def match_rules(hook: Webhook, attrs: Attributes, registry: Registry) -> Invocation | None:
    resource = attrs.resource
    if any(rule_matches(rule, attrs, resource.group, resource.version) for rule in hook.rules):
        # the subresources that reach admission (status, finalize) carry the resource's own kind
        return Invocation(hook, resource.group, resource.version, resource.plural, resource.kind)
    if hook.match_policy != "Equivalent":
        return None
    for other in registry.types:  # the same resource served at another version of its group
        if other.group == resource.group and other.plural == resource.plural and other.version != resource.version \
                and any(rule_matches(rule, attrs, other.group, other.version) for rule in hook.rules):
            return Invocation(hook, other.group, other.version, other.plural, other.kind)
    return None


def _labels(obj: Obj | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels") if isinstance(obj, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def namespace_labels(attrs: Attributes, reader: ObjectReader) -> dict[str, str]:
    """The labels the namespaceSelector is matched against: a Namespace's own (the new object's, when the
    request writes one), else those of the request's namespace."""
    if attrs.resource.plural == "namespaces" and not attrs.resource.group:
        if attrs.operation != "DELETE" and attrs.obj is not None:
            return _labels(attrs.obj)
        name = attrs.name
    else:
        name = attrs.namespace or ""
    namespace = reader.get("", "v1", "namespaces", None, name)
    if namespace is None:
        raise not_found("namespaces", "", name)
    return _labels(namespace)


def selectors_match(hook: Webhook, attrs: Attributes, reader: ObjectReader) -> bool:
    if hook.selector_problem:
        raise internal(hook.selector_problem)
    return selectors_match_for(hook.namespace_selector, hook.object_selector, attrs, reader)


def selectors_match_for(namespace_selector: LabelSelector | None, object_selector: LabelSelector | None,
                        attrs: Attributes, reader: ObjectReader) -> bool:
    """The namespaceSelector (a cluster-scoped object that is not a Namespace always matches) and the
    objectSelector (the new or the old object's labels); None matches everything."""
    is_namespace = attrs.resource.plural == "namespaces" and not attrs.resource.group
    if namespace_selector is not None and (attrs.namespace or is_namespace):
        if not namespace_selector.matches(namespace_labels(attrs, reader)):
            return False
    if object_selector is None:
        return True
    return (attrs.obj is not None and object_selector.matches(_labels(attrs.obj))) or \
        (attrs.old is not None and object_selector.matches(_labels(attrs.old)))


def should_call(hook: Webhook, attrs: Attributes, reader: ObjectReader, registry: Registry) -> Invocation | None:
    """The invocation when ``hook`` is for this request (before its matchConditions); StatusError when the
    namespace of the request does not exist (404, as Kubernetes answers) or a selector cannot be read."""
    invocation = match_rules(hook, attrs, registry)
    if invocation is None:
        return None
    return invocation if selectors_match(hook, attrs, reader) else None
