"""Field validation as Kubernetes does it: pure functions, no I/O.

Two layers, as in k8s.io/apimachinery: ``is_*`` functions test one string and return plain messages (empty when
valid); ``validate_*`` functions walk a piece of an object and return ``Cause``s carrying a field path in
Kubernetes' form (``metadata.name``, ``spec.containers[0].image``, ``metadata.labels``) and a message in the form
of ``field.Error.ErrorBody()`` (``Invalid value: "x": <detail>``), so the API server can render a 422 exactly as
Kubernetes does.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeGuard

from minik.api.errors import Cause

# re-exported: the cause constructors are part of this module's interface (``validation.invalid`` etc.)
from minik.api.fielderrors import (  # noqa: F401
    child,
    duplicate,
    forbidden,
    go_repr,
    index,
    invalid,
    not_found,
    not_supported,
    required,
    too_long,
    type_invalid,
)

Causes = list[Cause]
Obj = dict[str, Any]

# -- plain string rules (k8s.io/apimachinery/pkg/util/validation) ---------------------------------------------

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
TOTAL_ANNOTATION_SIZE = 256 * 1024

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + QUALIFIED_NAME_FMT + ")?"
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
PERCENT_FMT = "[0-9]+%"


def _full(fmt: str) -> re.Pattern[str]:
    """``fmt`` compiled to be matched against a whole string (with ``fullmatch``: ``^...$`` with ``match`` would
    let a trailing newline through, as ``$`` matches before one)."""
    return re.compile(f"(?:{fmt})")


_DNS1123_LABEL = _full(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = _full(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = _full(DNS1035_LABEL_FMT)
_QUALIFIED_NAME = _full(QUALIFIED_NAME_FMT)
_LABEL_VALUE = _full(LABEL_VALUE_FMT)
_CONFIG_MAP_KEY = _full(CONFIG_MAP_KEY_FMT)
_ENV_VAR_NAME = _full(ENV_VAR_NAME_FMT)
_PERCENT = _full(PERCENT_FMT)
_PORT_NAME_CHARS = _full("[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile(r"[a-z]")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """Kubernetes' RegexError, spacing included: ``... (e.g. 'a',  or 'b', regex used for validation is '...')``."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for i, example in enumerate(examples):
        if i:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def inclusive_range_error(low: int, high: int) -> str:
    return f"must be between {low} and {high}, inclusive"


#: answers each memoized check keeps; it starts over when full (label keys, toleration keys, image-pull names and
#: namespaces repeat on every write, object names mostly do not)
_MEMO_SIZE = 4096


def _memo(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``check`` answered from memory for a string it has seen: these regular expressions run on every key and
    name of every write. Each caller gets its own list."""
    answers: dict[str, tuple[str, ...]] = {}

    @functools.wraps(check)
    def memoized(value: str) -> list[str]:
        if type(value) is not str:  # noqa: E721 - only strings are remembered
            return check(value)
        found = answers.get(value)
        if found is None:
            if len(answers) >= _MEMO_SIZE:
                answers.clear()
            found = answers[value] = tuple(check(value))
        return list(found)

    return memoized


@_memo
def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL.fullmatch(value):
        errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                "'-', and must start and end with an alphanumeric character",
                                DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


@_memo
def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                "'-' or '.', and must start and end with an alphanumeric character",
                                DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                "with an alphabetic character, and end with an alphanumeric character",
                                DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character")


@_memo
def is_qualified_name(value: str) -> list[str]:
    """A label key, annotation key or finalizer: an optional DNS subdomain prefix and '/', then a name of 1-63."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a qualified name " + regex_error(_QUALIFIED_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + regex_error(_QUALIFIED_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


@_memo
def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', "
                                "'_' or '.', and must start and end with an alphanumeric character",
                                LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value: str) -> list[str]:
    """A key of a ConfigMap's or Secret's data."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _CONFIG_MAP_KEY.fullmatch(value):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _chdir_prefix(value)


def is_env_var_name(value: str) -> list[str]:
    errs = []
    if not _ENV_VAR_NAME.fullmatch(value):
        errs.append(regex_error("a valid environment variable name must consist of alphabetic characters, digits, "
                                "'_', '-', or '.', and must not start with a digit",
                                ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _chdir_prefix(value)


def is_valid_port_num(port: Any) -> list[str]:
    if isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535:
        return []
    return [inclusive_range_error(1, 65535)]


def is_valid_port_name(name: str) -> list[str]:
    """An IANA_SVC_NAME: at most 15 characters, a-z 0-9 and '-', at least one letter, no '--', no edge '-'."""
    errs = []
    if len(name) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARS.fullmatch(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


@_memo
def is_valid_ip(value: str) -> list[str]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def is_valid_percent(value: str) -> list[str]:
    if _PERCENT.fullmatch(value):
        return []
    return [regex_error("a valid percent string must be a numeric string followed by an ending '%'", PERCENT_FMT,
                        "1%", "93%")]


def is_valid_path_segment_name(value: str, prefix: bool = False) -> list[str]:
    if not prefix and value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


# -- object names -----------------------------------------------------------------------------------------------


def _mask_trailing_dash(name: str) -> str:
    """A generateName prefix may end in '-': test it as if a generated suffix followed."""
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


_NAME_RULES = {
    "subdomain": is_dns1123_subdomain,
    "label": is_dns1123_label,
    "dns1035": is_dns1035_label,
}


def validate_name(name: str, rule: str, prefix: bool = False) -> list[str]:
    """Messages for a name under a rule: "subdomain", "label" (RFC 1123), "dns1035" (services), "path" (any
    valid path segment). ``prefix`` tests a generateName."""
    if rule == "path":
        return is_valid_path_segment_name(name, prefix)
    try:
        check = _NAME_RULES[rule]
    except KeyError:
        raise ValueError(f"unknown name rule {rule!r}") from None
    return check(_mask_trailing_dash(name) if prefix else name)


# -- metadata -------------------------------------------------------------------------------------------------


def _string_map(value: Any, path: str) -> tuple[dict[str, str], Causes]:
    if value is None:
        return {}, []
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return {}, [type_invalid(path, value, "must be a map of string to string")]
    return value, []


def validate_labels(labels: Any, path: str) -> Causes:
    """Label keys are qualified names and values are label values; causes name the whole map (``metadata.labels``)
    as Kubernetes does."""
    checked, causes = _string_map(labels, path)
    for key, value in checked.items():
        causes += [invalid(path, key, m) for m in is_qualified_name(key)]
        causes += [invalid(path, value, m) for m in is_valid_label_value(value)]
    return causes


def validate_annotations(annotations: Any, path: str) -> Causes:
    checked, causes = _string_map(annotations, path)
    total = 0
    for key, value in checked.items():
        causes += [invalid(path, key, m) for m in is_qualified_name(key.lower())]
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_SIZE:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE))
    return causes


def validate_finalizers(finalizers: Any, path: str) -> Causes:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
        return [type_invalid(path, finalizers, "must be a list of strings")]
    causes = [invalid(path, f, m) for f in finalizers for m in is_qualified_name(f)]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return causes


def validate_owner_references(refs: Any, path: str) -> Causes:
    """Each reference needs apiVersion (with a version), kind, name and uid; at most one may be the controller.
    Kubernetes names the fields without an index (``metadata.ownerReferences.uid``)."""
    if refs is None:
        return []
    if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
        return [type_invalid(path, refs, "must be a list of objects")]
    causes: Causes = []
    controller = ""
    for ref in refs:
        api_version = ref.get("apiVersion") or ""
        version = api_version.rpartition("/")[2] if isinstance(api_version, str) else ""
        if not version:
            causes.append(invalid(child(path, "apiVersion"), api_version, "version must not be empty"))
        if not ref.get("kind"):
            causes.append(invalid(child(path, "kind"), ref.get("kind") or "", "kind must not be empty"))
        if not ref.get("name"):
            causes.append(invalid(child(path, "name"), ref.get("name") or "", "name must not be empty"))
        if not ref.get("uid"):
            causes.append(invalid(child(path, "uid"), ref.get("uid") or "", "uid must not be empty"))
        if ref.get("controller") is True:
            this = f"{ref.get('kind')}/{ref.get('name')}"
            if controller:
                causes.append(invalid(path, refs, "Only one reference can have Controller set to true. Found "
                                                  f'"true" in references for {controller} and {this}'))
            else:
                controller = this
    return causes


def validate_object_meta(meta: Any, name_rule: str, namespaced: bool) -> Causes:
    """ObjectMeta on create (and update): name or generateName, namespace, labels, annotations, finalizers and
    ownerReferences."""
    if not isinstance(meta, dict):
        return [type_invalid("metadata", meta, "must be an object")]
    causes: Causes = []
    generate = meta.get("generateName") or ""
    if not isinstance(generate, str):
        causes.append(type_invalid("metadata.generateName", generate, "must be a string"))
    elif generate:
        causes += [invalid("metadata.generateName", generate, m) for m in validate_name(generate, name_rule, True)]
    name = meta.get("name") or ""
    if not isinstance(name, str):
        causes.append(type_invalid("metadata.name", name, "must be a string"))
    elif not name:
        if not generate:
            causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes += [invalid("metadata.name", name, m) for m in validate_name(name, name_rule)]
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        elif not isinstance(namespace, str):
            causes.append(type_invalid("metadata.namespace", namespace, "must be a string"))
        else:
            causes += [invalid("metadata.namespace", namespace, m) for m in is_dns1123_label(namespace)]
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(invalid("metadata.generation", generation, "must be greater than or equal to 0"))
    causes += validate_labels(meta.get("labels"), "metadata.labels")
    causes += validate_annotations(meta.get("annotations"), "metadata.annotations")
    causes += validate_owner_references(meta.get("ownerReferences"), "metadata.ownerReferences")
    causes += validate_finalizers(meta.get("finalizers"), "metadata.finalizers")
    return causes


def validate_object_meta_update(meta: Any, old: Any) -> Causes:
    """What may never change once an object exists: name, namespace, uid, creationTimestamp."""
    if not isinstance(meta, dict) or not isinstance(old, dict):
        return []
    causes: Causes = []
    for name in ("name", "namespace", "uid", "creationTimestamp"):
        causes += validate_immutable(meta.get(name), old.get(name), f"metadata.{name}")
    return causes


# -- small shared rules -----------------------------------------------------------------------------------------

FIELD_IMMUTABLE = "field is immutable"


def validate_immutable(new: Any, old: Any, path: str) -> Causes:
    return [] if new == old else [invalid(path, new, FIELD_IMMUTABLE)]


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_nonnegative(value: Any, path: str) -> Causes:
    """An optional integer field that must be >= 0 (absent is fine)."""
    if value is None:
        return []
    if not is_int(value):
        return [type_invalid(path, value, "must be an integer")]
    return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []


def validate_enum(value: Any, path: str, supported: Sequence[str], *, required_: bool = True) -> Causes:
    """Required when empty (unless ``required_`` is False), NotSupported when not one of ``supported``."""
    if value in (None, ""):
        return [required(path)] if required_ else []
    return [] if value in supported else [not_supported(path, value, supported)]


def validate_enum_field(obj: Obj, field: str, path: str, supported: Sequence[str], *,
                        required_: bool = True) -> Causes:
    """``validate_enum`` of ``obj[field]`` at ``path.field``; the path is only built when there is a cause."""
    value = obj.get(field)
    if value in supported:
        return []
    return validate_enum(value, child(path, field), supported, required_=required_)


def validate_label_selector(selector: Any, path: str) -> Causes:
    """A metav1.LabelSelector: matchLabels as labels, matchExpressions with In/NotIn (values required) and
    Exists/DoesNotExist (values forbidden)."""
    if selector is None:
        return []
    if not isinstance(selector, dict):
        return [type_invalid(path, selector, "must be an object")]
    causes = validate_labels(selector.get("matchLabels"), child(path, "matchLabels"))
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return causes + [type_invalid(child(path, "matchExpressions"), expressions, "must be a list")]
    for i, expr in enumerate(expressions):
        at = index(child(path, "matchExpressions"), i)
        if not isinstance(expr, dict):
            causes.append(type_invalid(at, expr, "must be an object"))
            continue
        values = expr.get("values") or []
        operator = expr.get("operator")
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(required(child(at, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(forbidden(child(at, "values"),
                                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            causes.append(invalid(child(at, "operator"), operator, "not a valid selector operator"))
        key = expr.get("key") or ""
        causes += [invalid(child(at, "key"), key, m) for m in is_qualified_name(str(key))]
        if isinstance(values, list):
            for j, value in enumerate(values):
                causes += [invalid(index(child(at, "values"), j), value, m) for m in is_valid_label_value(str(value))]
    return causes


def names_in(items: Iterable[Any]) -> list[str]:
    """The ``name`` of each object in a list (skipping what is not an object)."""
    return [str(i.get("name") or "") for i in items if isinstance(i, dict)]
