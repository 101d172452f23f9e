"""admissionregistration.k8s.io/v1: MutatingWebhookConfiguration and ValidatingWebhookConfiguration, with
Kubernetes' defaults (pkg/apis/admissionregistration/v1/defaults.go) and validation
(pkg/apis/admissionregistration/validation). Calling the webhooks is minik.apiserver.admission's part."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from minik.api import validation as v
from minik.api.errors import Cause
from minik.api.kinds.common import Causes, Obj, dicts_at, set_default
from minik.api.matchconditions import WEBHOOK, Declarations, compile_problem
from minik.api.strategy import Strategy

__all__ = ["ADMISSION_GROUP", "EXEMPT_RESOURCES", "MutatingWebhookConfigurationStrategy",
           "ValidatingWebhookConfigurationStrategy"]

ADMISSION_GROUP = "admissionregistration.k8s.io"
#: the resources no webhook is called for, so that a broken webhook can always be removed (Kubernetes'
#: IsExemptAdmissionConfigurationResource)
EXEMPT_RESOURCES = frozenset({"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
                              "validatingadmissionpolicies", "validatingadmissionpolicybindings",
                              "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"})

OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
SIDE_EFFECTS = ("None", "NoneOnDryRun", "Some", "Unknown")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
REVIEW_VERSIONS = ("v1", "v1beta1")
MAX_MATCH_CONDITIONS = 64
DEFAULT_TIMEOUT_SECONDS = 10
DEFAULT_SERVICE_PORT = 443


# -- defaults -----------------------------------------------------------------------------------------------
def _default_webhook(hook: Obj, mutating: bool) -> None:
    set_default(hook, "failurePolicy", "Fail")
    set_default(hook, "matchPolicy", "Equivalent")
    for selector in ("namespaceSelector", "objectSelector"):
        if hook.get(selector) is None:
            hook[selector] = {}
    if hook.get("timeoutSeconds") is None:
        hook["timeoutSeconds"] = DEFAULT_TIMEOUT_SECONDS
    if mutating:
        set_default(hook, "reinvocationPolicy", "Never")
    for rule in dicts_at(hook, "rules"):
        set_default(rule, "scope", "*")
    config = hook.get("clientConfig")
    service = config.get("service") if isinstance(config, dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = DEFAULT_SERVICE_PORT


# -- validation ---------------------------------------------------------------------------------------------
def _strings(value: Any, path: str) -> tuple[list[str], Causes]:
    if value is None:
        return [], []
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return value, []
    return [], [v.type_invalid(path, value, "must be a list of strings")]


def is_fully_qualified_name(name: Any, path: str) -> Causes:
    if not name:
        return [v.required(path)]
    if not isinstance(name, str):
        return [v.type_invalid(path, name, "must be a string")]
    problems = v.is_dns1123_subdomain(name)
    if problems:
        return [v.invalid(path, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [v.invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def validate_resources(resources: list[str], path: str) -> Causes:
    """Resources and subresources (``pods``, ``pods/status``, ``*``, ``*/*``, ``pods/*``, ``*/scale``)."""
    causes: Causes = [] if resources else [v.required(path)]
    with_any_sub: set[str] = set()
    any_with_sub: set[str] = set()
    double = single = plain = False
    for i, item in enumerate(resources):
        if item == "":
            causes.append(v.required(v.index(path, i)))
            continue
        double = double or item == "*/*"
        single = single or item == "*"
        res, slash, sub = item.partition("/")
        if not slash:
            plain = item != "*"
            continue
        if res in with_any_sub:
            causes.append(v.invalid(v.index(path, i), item, f"if '{res}/*' is present, must not specify {item}"))
        if sub in any_with_sub:
            causes.append(v.invalid(v.index(path, i), item, f"if '*/{sub}' is present, must not specify {item}"))
        if sub == "*":
            with_any_sub.add(res)
        if res == "*":
            any_with_sub.add(sub)
    if len(resources) > 1 and double:
        causes.append(v.invalid(path, resources, "if '*/*' is present, must not specify other resources"))
    if single and plain:
        causes.append(v.invalid(path, resources, "if '*' is present, must not specify other resources without "
                                                 "subresources"))
    return causes


def validate_rule(rule: Any, path: str) -> Causes:
    """A RuleWithOperations."""
    if not isinstance(rule, dict):
        return [v.type_invalid(path, rule, "must be an object")]
    causes: Causes = []
    operations, bad = _strings(rule.get("operations"), v.child(path, "operations"))
    causes += bad
    if not operations and not bad:
        causes.append(v.required(v.child(path, "operations")))
    if len(operations) > 1 and "*" in operations:
        causes.append(v.invalid(v.child(path, "operations"), operations,
                                "if '*' is present, must not specify other operations"))
    for i, operation in enumerate(operations):
        if operation not in OPERATIONS:
            causes.append(v.not_supported(v.index(v.child(path, "operations"), i), operation, OPERATIONS))
    groups, bad = _strings(rule.get("apiGroups"), v.child(path, "apiGroups"))
    causes += bad
    if not groups and not bad:
        causes.append(v.required(v.child(path, "apiGroups")))
    if len(groups) > 1 and "*" in groups:
        causes.append(v.invalid(v.child(path, "apiGroups"), groups,
                                "if '*' is present, must not specify other API groups"))
    versions, bad = _strings(rule.get("apiVersions"), v.child(path, "apiVersions"))
    causes += bad
    if not versions and not bad:
        causes.append(v.required(v.child(path, "apiVersions")))
    if len(versions) > 1 and "*" in versions:
        causes.append(v.invalid(v.child(path, "apiVersions"), versions,
                                "if '*' is present, must not specify other API versions"))
    causes += [v.required(v.index(v.child(path, "apiVersions"), i)) for i, ver in enumerate(versions) if not ver]
    resources, bad = _strings(rule.get("resources"), v.child(path, "resources"))
    causes += bad or validate_resources(resources, v.child(path, "resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        causes.append(v.not_supported(v.child(path, "scope"), scope, SCOPES))
    return causes


_URL_FORM = "; desired format: https://host[/path]"


def validate_url(url: Any, path: str) -> Causes:
    if not isinstance(url, str):
        return [v.type_invalid(path, url, "must be a string")]
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is no number
    except ValueError as exc:
        return [v.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    causes: Causes = []
    if parts.scheme != "https":
        causes.append(v.invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not parts.netloc:
        causes.append(v.invalid(path, parts.netloc, "host must be provided" + _URL_FORM))
    if "@" in parts.netloc:
        causes.append(v.invalid(path, parts.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(v.invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(v.invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def validate_service(service: Any, path: str) -> Causes:
    if not isinstance(service, dict):
        return [v.type_invalid(path, service, "must be an object")]
    causes: Causes = []
    if not service.get("name"):
        causes.append(v.required(v.child(path, "name"), "service name is required"))
    if not service.get("namespace"):
        causes.append(v.required(v.child(path, "namespace"), "service namespace is required"))
    port = service.get("port")
    problems = v.is_valid_port_num(port)
    if problems:
        causes.append(v.invalid(v.child(path, "port"), port, "port is not valid: " + ", ".join(problems)))
    url_path = service.get("path")
    if url_path is None or url_path in ("", "/"):
        return causes
    at = v.child(path, "path")
    if not isinstance(url_path, str):
        return causes + [v.type_invalid(at, url_path, "must be a string")]
    if url_path == "//":
        return causes + [v.invalid(at, url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(v.invalid(at, url_path, "must start with a '/'"))
    steps = url_path[1:]
    if steps.endswith("/"):
        steps = steps[:-1]
    for i, step in enumerate(steps.split("/")):
        if not step:
            causes.append(v.invalid(at, url_path, f"segment[{i}] may not be empty"))
            continue
        causes += [v.invalid(at, url_path, f"segment[{i}]: {m}") for m in v.is_dns1123_subdomain(step)]
    return causes


def validate_client_config(config: Any, path: str) -> Causes:
    if not isinstance(config, dict):
        return [v.required(path, "exactly one of url or service is required") if config is None else
                v.type_invalid(path, config, "must be an object")]
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [v.required(path, "exactly one of url or service is required")]
    if url is not None:
        return validate_url(url, v.child(path, "url"))
    return validate_service(service, v.child(path, "service"))


def validate_match_conditions(conditions: Any, path: str, decls: Declarations = WEBHOOK) -> Causes:
    """A webhook's or a policy's matchConditions (``decls``: what their expressions may read)."""
    if conditions is None:
        return []
    if not isinstance(conditions, list):
        return [v.type_invalid(path, conditions, "must be a list")]
    causes: Causes = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        causes.append(Cause(path, "FieldValueTooMany",
                            f"Too many: {len(conditions)}: must have at most {MAX_MATCH_CONDITIONS} items"))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        at = v.index(path, i)
        if not isinstance(condition, dict):
            causes.append(v.type_invalid(at, condition, "must be an object"))
            continue
        expression = condition.get("expression")
        if not isinstance(expression, str) or not expression.strip():
            causes.append(v.required(v.child(at, "expression")))
        else:
            problem = compile_problem(expression.strip(), decls)
            if problem:
                causes.append(v.invalid(v.child(at, "expression"), expression.strip(), problem))
        name = condition.get("name")
        if not name:
            causes.append(v.required(v.child(at, "name")))
        elif not isinstance(name, str):
            causes.append(v.type_invalid(v.child(at, "name"), name, "must be a string"))
        else:
            causes += [v.invalid(v.child(at, "name"), name, m) for m in v.is_qualified_name(name)]
            if name in names:
                causes.append(v.duplicate(v.child(at, "name"), name))
            names.add(name)
    return causes


def validate_review_versions(versions: Any, path: str) -> Causes:
    if not versions:
        return [v.required(path, "must specify one of " + ", ".join(REVIEW_VERSIONS))]
    if not isinstance(versions, list) or not all(isinstance(s, str) for s in versions):
        return [v.type_invalid(path, versions, "must be a list of strings")]
    causes: Causes = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append(v.invalid(v.index(path, i), version, "duplicate version"))
            continue
        seen.add(version)
        causes += [v.invalid(v.index(path, i), version, m) for m in v.is_dns1035_label(version)]
    if not seen & set(REVIEW_VERSIONS):
        causes.append(v.invalid(path, versions, "must include at least one of " + ", ".join(REVIEW_VERSIONS)))
    return causes


def validate_webhook(hook: Any, path: str, mutating: bool, side_effects: tuple[str, ...]) -> Causes:
    if not isinstance(hook, dict):
        return [v.type_invalid(path, hook, "must be an object")]
    causes = is_fully_qualified_name(hook.get("name"), v.child(path, "name"))
    rules = hook.get("rules")
    if rules is not None and not isinstance(rules, list):
        causes.append(v.type_invalid(v.child(path, "rules"), rules, "must be a list"))
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        causes += validate_rule(rule, v.index(v.child(path, "rules"), i))
    causes += v.validate_enum_field(hook, "failurePolicy", path, FAILURE_POLICIES, required_=False)
    causes += v.validate_enum_field(hook, "matchPolicy", path, MATCH_POLICIES, required_=False)
    effects = hook.get("sideEffects")
    if effects in (None, ""):
        causes.append(v.required(v.child(path, "sideEffects"), "must specify one of " + ", ".join(side_effects)))
    elif effects not in side_effects:
        causes.append(v.not_supported(v.child(path, "sideEffects"), effects, side_effects))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (not v.is_int(timeout) or not 1 <= timeout <= 30):
        causes.append(v.invalid(v.child(path, "timeoutSeconds"), timeout,
                                "the timeout value must be between 1 and 30 seconds"))
    for selector in ("namespaceSelector", "objectSelector"):
        causes += v.validate_label_selector(hook.get(selector), v.child(path, selector))
    if mutating:
        causes += v.validate_enum_field(hook, "reinvocationPolicy", path, REINVOCATION_POLICIES, required_=False)
    causes += validate_client_config(hook.get("clientConfig"), v.child(path, "clientConfig"))
    causes += validate_match_conditions(hook.get("matchConditions"), v.child(path, "matchConditions"))
    return causes


class _WebhookConfigurationStrategy(Strategy):
    namespace_scoped = False
    tracks_generation = True
    mutating = False

    def default(self, obj: Obj) -> None:
        for hook in dicts_at(obj, "webhooks"):
            _default_webhook(hook, self.mutating)

    def _validate(self, obj: Obj, side_effects: tuple[str, ...], unique_names: bool) -> Causes:
        causes = super().validate(obj)
        hooks = obj.get("webhooks")
        if hooks is None:
            return causes
        if not isinstance(hooks, list):
            return causes + [v.type_invalid("webhooks", hooks, "must be a list")]
        names: set[str] = set()
        for i, hook in enumerate(hooks):
            at = v.index("webhooks", i)
            causes += validate_webhook(hook, at, self.mutating, side_effects)
            if isinstance(hook, dict):
                causes += validate_review_versions(hook.get("admissionReviewVersions"),
                                                   v.child(at, "admissionReviewVersions"))
                name = hook.get("name")
                if unique_names and isinstance(name, str) and name:
                    if name in names:
                        causes.append(v.duplicate(v.child(at, "name"), name))
                    names.add(name)
        return causes

    def validate(self, obj: Obj) -> Causes:
        return self._validate(obj, NO_SIDE_EFFECTS, unique_names=True)

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        """As Kubernetes, an update may keep what an older API allowed: sideEffects Some or Unknown and repeated
        names, when the old object had them."""
        old_hooks = dicts_at(old, "webhooks")
        side_effects = NO_SIDE_EFFECTS if all(h.get("sideEffects") in NO_SIDE_EFFECTS for h in old_hooks) \
            else SIDE_EFFECTS
        old_names = [h.get("name") for h in old_hooks]
        unique = len(old_names) == len(set(old_names))
        return v.validate_object_meta_update(obj.get("metadata"), old.get("metadata")) + \
            self._validate(obj, side_effects, unique)


class MutatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = True


class ValidatingWebhookConfigurationStrategy(_WebhookConfigurationStrategy):
    mutating = False
