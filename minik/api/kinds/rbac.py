"""rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding and ClusterRoleBinding, with Kubernetes' defaults
and validation (pkg/apis/rbac/validation). Names are any valid path segment, as Kubernetes allows for these kinds
(``system:kube-scheduler`` is a valid name). What a rule grants is minik.apiserver.auth.rbac's part."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at
from minik.api.selectors import selector_from_dict
from minik.api.strategy import Strategy

__all__ = ["ClusterRoleBindingStrategy", "ClusterRoleStrategy", "RBAC_GROUP", "RoleBindingStrategy", "RoleStrategy",
           "aggregated_rules", "aggregation_selectors"]

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _strings(value: Any, path: str) -> Causes:
    if value is None or (isinstance(value, list) and all(isinstance(s, str) for s in value)):
        return []
    return [v.type_invalid(path, value, "must be a list of strings")]


def validate_policy_rule(rule: Any, namespaced: bool, path: str) -> Causes:
    """A PolicyRule: verbs always; either resource rules (apiGroups and resources) or nonResourceURLs, the latter
    only in cluster-scoped roles."""
    if not isinstance(rule, dict):
        return [v.type_invalid(path, rule, "must be an object")]
    causes: Causes = []
    for field in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs"):
        causes += _strings(rule.get(field), v.child(path, field))
    if causes:
        return causes
    if not rule.get("verbs"):
        causes.append(v.required(v.child(path, "verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        at = v.child(path, "nonResourceURLs")
        if namespaced:
            causes.append(v.invalid(at, urls, "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            causes.append(v.invalid(at, urls, "rules cannot apply to both regular resources and non-resource URLs"))
        return causes
    if not rule.get("apiGroups"):
        causes.append(v.required(v.child(path, "apiGroups"), "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        causes.append(v.required(v.child(path, "resources"), "resource rules must supply at least one resource"))
    return causes


def _validate_rules(obj: Obj, namespaced: bool) -> Causes:
    rules = obj.get("rules")
    if rules is None:
        return []
    if not isinstance(rules, list):
        return [v.type_invalid("rules", rules, "must be a list")]
    causes: Causes = []
    for i, rule in enumerate(rules):
        causes += validate_policy_rule(rule, namespaced, v.index("rules", i))
    return causes


class RoleStrategy(Strategy):
    name_rule = "path"

    def validate(self, obj: Obj) -> Causes:
        return super().validate(obj) + _validate_rules(obj, namespaced=True)


class ClusterRoleStrategy(Strategy):
    name_rule = "path"
    namespace_scoped = False

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj) + _validate_rules(obj, namespaced=False)
        aggregation = obj.get("aggregationRule")
        if aggregation is None:
            return causes
        if not isinstance(aggregation, dict):
            return causes + [v.type_invalid("aggregationRule", aggregation, "must be an object")]
        selectors = aggregation.get("clusterRoleSelectors")
        at = v.child("aggregationRule", "clusterRoleSelectors")
        if not selectors:
            return causes + [v.required(at, "at least one clusterRoleSelector required if aggregationRule is "
                                            "non-nil")]
        if not isinstance(selectors, list):
            return causes + [v.type_invalid(at, selectors, "must be a list")]
        for i, selector in enumerate(selectors):
            causes += v.validate_label_selector(selector, v.index(at, i))
        return causes


def _default_binding(obj: Obj) -> None:
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = RBAC_GROUP
    subjects = obj.get("subjects")
    for subject in subjects if isinstance(subjects, list) else []:
        if isinstance(subject, dict) and not subject.get("apiGroup"):
            if subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP
            elif subject.get("kind") == "ServiceAccount":
                subject.pop("apiGroup", None)  # "" for service accounts, which JSON leaves out


def _validate_subject(subject: Any, namespaced: bool, path: str) -> Causes:
    if not isinstance(subject, dict):
        return [v.type_invalid(path, subject, "must be an object")]
    name, kind, group = subject.get("name"), subject.get("kind"), subject.get("apiGroup") or ""
    causes: Causes = []
    if not name:
        causes.append(v.required(v.child(path, "name")))
    elif not isinstance(name, str):
        causes.append(v.type_invalid(v.child(path, "name"), name, "must be a string"))
    if kind == "ServiceAccount":
        if isinstance(name, str) and name:
            causes += [v.invalid(v.child(path, "name"), name, m) for m in v.is_dns1123_subdomain(name)]
        if group:
            causes.append(v.not_supported(v.child(path, "apiGroup"), group, [""]))
        namespace = subject.get("namespace")
        if not namespaced and not namespace:
            causes.append(v.required(v.child(path, "namespace")))
        elif namespace and isinstance(namespace, str):
            causes += [v.invalid(v.child(path, "namespace"), namespace, m) for m in v.is_dns1123_label(namespace)]
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            causes.append(v.not_supported(v.child(path, "apiGroup"), group, [RBAC_GROUP]))
        if kind == "Group" and isinstance(name, str) and name:
            causes += [v.invalid(v.child(path, "name"), name, m) for m in v.is_valid_path_segment_name(name)]
    else:
        causes.append(v.not_supported(v.child(path, "kind"), kind or "", list(SUBJECT_KINDS)))
    return causes


class _BindingStrategy(Strategy):
    name_rule = "path"
    #: the kinds of role a binding of this kind may refer to
    role_kinds: tuple[str, ...] = ()

    def default(self, obj: Obj) -> None:
        _default_binding(obj)

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        ref = obj.get("roleRef")
        if not isinstance(ref, dict):
            causes.append(v.required("roleRef") if ref is None else v.type_invalid("roleRef", ref, "must be an object"))
        else:
            if ref.get("apiGroup") != RBAC_GROUP:
                causes.append(v.not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [RBAC_GROUP]))
            if ref.get("kind") not in self.role_kinds:
                causes.append(v.not_supported("roleRef.kind", ref.get("kind") or "", list(self.role_kinds)))
            name = ref.get("name")
            if not name:
                causes.append(v.required("roleRef.name"))
            elif not isinstance(name, str):
                causes.append(v.type_invalid("roleRef.name", name, "must be a string"))
            else:
                causes += [v.invalid("roleRef.name", name, m) for m in v.is_valid_path_segment_name(name)]
        subjects = obj.get("subjects")
        if subjects is not None and not isinstance(subjects, list):
            return causes + [v.type_invalid("subjects", subjects, "must be a list")]
        for i, subject in enumerate(subjects or []):
            causes += _validate_subject(subject, self.namespace_scoped, v.index("subjects", i))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        if obj.get("roleRef") != old.get("roleRef"):
            causes.append(v.invalid("roleRef", dict_at(obj, "roleRef"), "cannot change roleRef"))
        return causes


class RoleBindingStrategy(_BindingStrategy):
    role_kinds = ("Role", "ClusterRole")


class ClusterRoleBindingStrategy(_BindingStrategy):
    namespace_scoped = False
    role_kinds = ("ClusterRole",)


# -- aggregation ------------------------------------------------------------------------------------------------------
def aggregation_selectors(role: Obj) -> list[Any]:
    """The clusterRoleSelectors of a ClusterRole's aggregationRule (none for a role without one)."""
    rule = role.get("aggregationRule")
    selectors = rule.get("clusterRoleSelectors") if isinstance(rule, dict) else None
    return [s for s in selectors if isinstance(s, dict)] if isinstance(selectors, list) else []


def aggregated_rules(role: Obj, roles: list[Obj]) -> list[Obj]:
    """The rules an aggregated ClusterRole gathers from ``roles``: those of every other role whose labels one of
    its selectors matches, in the order of the roles' names, each distinct rule once (Kubernetes' aggregation
    controller's result)."""
    name = dict_at(role, "metadata").get("name")
    rules: list[Obj] = []
    ordered = sorted(roles, key=lambda r: str(dict_at(r, "metadata").get("name") or ""))
    for raw in aggregation_selectors(role):
        try:
            selector = selector_from_dict(raw)
        except ValueError:
            continue  # validation refuses a bad selector; an old object keeps what it has
        for other in ordered:
            meta = dict_at(other, "metadata")
            if meta.get("name") == name or not selector.matches(meta.get("labels") or {}):
                continue
            for rule in other.get("rules") or []:
                if rule not in rules:
                    rules.append(rule)
    return rules
