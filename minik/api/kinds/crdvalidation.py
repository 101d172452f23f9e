"""Validation of CustomResourceDefinitions, with Kubernetes' field paths and messages.

Kubernetes validates a CRD in its internal form, into which a v1 CRD converts with the per-version schema,
subresources, printer columns and selectable fields moved up to ``spec.validation``, ``spec.subresources``,
``spec.additionalPrinterColumns`` and ``spec.selectableFields`` when every version has the same; its messages
then name those fields. The paths here follow it. The conversion webhook's settings are named as in the internal
form too (``spec.conversion.webhookClientConfig``, ``spec.conversion.conversionReviewVersions``).
"""

from __future__ import annotations

import unicodedata
from typing import Any
from urllib.parse import urlsplit

from minik.api import validation as v
from minik.api.errors import Cause
from minik.api.kinds import crdschemas
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at, list_at

__all__ = ["validate_crd", "validate_crd_status", "MAX_SELECTABLE_FIELDS"]

PRINTER_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
PRINTER_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
MAX_SELECTABLE_FIELDS = 8
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")
def validate_crd(crd: Obj, old: Obj | None) -> Causes:
    """A CRD on create (``old`` None) or update."""
    meta = dict_at(crd, "metadata")
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return v.validate_object_meta(meta, "subdomain", namespaced=False) + [v.required("spec")]
    causes: Causes = []
    if old is None:
        causes += v.validate_object_meta(meta, "subdomain", namespaced=False)
        name = meta.get("name")
        names = dict_at(spec, "names")
        wanted = f"{names.get('plural') or ''}.{spec.get('group') or ''}"
        if isinstance(name, str) and name and name != wanted:
            causes.append(v.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    else:
        causes += v.validate_object_meta_update(meta, dict_at(old, "metadata"))
        causes += v.validate_object_meta(meta, "subdomain", namespaced=False)
    causes += _spec(spec, established=old is not None and _established(old))
    if old is not None:
        causes += _spec_update(spec, dict_at(old, "spec"), _established(old))
    causes += _status(dict_at(crd, "status"))
    causes += _stored_versions(crd)
    causes += _api_approval(crd, old)
    if spec.get("preserveUnknownFields") is True and dict_at(old or {}, "spec").get("preserveUnknownFields") is not True:
        causes.append(v.invalid("spec.preserveUnknownFields", True, "cannot set to true, set "
                                "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
    return causes


def validate_crd_status(crd: Obj, old: Obj) -> Causes:
    """A write to customresourcedefinitions/NAME/status."""
    return v.validate_object_meta_update(dict_at(crd, "metadata"), dict_at(old, "metadata")) + \
        _status(dict_at(crd, "status"))


def _established(crd: Obj) -> bool:
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in dicts_at(dict_at(crd, "status"), "conditions"))


# -- spec ---------------------------------------------------------------------------------------------------------
def _identical(values: list[Any]) -> bool:
    """Whether every version has the same value (then Kubernetes moves it up to the spec)."""
    return bool(values) and all(value == values[0] for value in values)


def _spec(spec: Obj, established: bool) -> Causes:
    causes: Causes = []
    group = spec.get("group")
    if not group:
        causes.append(v.required("spec.group"))
    elif not isinstance(group, str):
        causes.append(v.type_invalid("spec.group", group, "must be a string"))
    elif errs := v.is_dns1123_subdomain(group):
        causes.append(v.invalid("spec.group", group, ",".join(errs)))
    elif len(group.split(".")) < 2:
        causes.append(v.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        causes.append(v.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(v.not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    versions = list_at(spec, "versions")
    version_dicts = [item if isinstance(item, dict) else {} for item in versions]
    causes += _versions(spec, version_dicts)
    names = spec.get("names")
    if not isinstance(names, dict):
        causes.append(v.required("spec.names.plural"))
        causes.append(v.required("spec.names.singular"))
        causes.append(v.required("spec.names.kind"))
        causes.append(v.required("spec.names.listKind"))
    else:
        for key in ("plural", "singular", "kind", "listKind"):
            if not names.get(key):
                causes.append(v.required(f"spec.names.{key}"))
        causes += validate_names(names, "spec.names")
    causes += _conversion(spec)
    return causes


def _versions(spec: Obj, versions: list[Obj]) -> Causes:
    causes: Causes = []
    storage = sum(1 for version in versions if version.get("storage") is True)
    seen: set[str] = set()
    unique = True
    schemas = [version.get("schema") for version in versions]
    subresources = [version.get("subresources") for version in versions]
    columns = [version.get("additionalPrinterColumns") or None for version in versions]
    selectable = [version.get("selectableFields") or None for version in versions]
    shared_schema, shared_subresources = _identical(schemas), _identical(subresources)
    shared_columns, shared_selectable = _identical(columns), _identical(selectable)
    any_status = any(isinstance(s, dict) and s.get("status") is not None for s in subresources)
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        name = version.get("name")
        if isinstance(name, str) and name in seen:
            unique = False
        if isinstance(name, str):
            seen.add(name)
        if not isinstance(name, str) or (errs := v.is_dns1035_label(name)):
            causes.append(v.invalid(f"{path}.name", name, ",".join(errs if isinstance(name, str) else
                                                                    ["must be a string"])))
        causes += _deprecation(version, path)
        sub = version.get("subresources")
        status_enabled = isinstance(sub, dict) and sub.get("status") is not None
        if not shared_schema:
            causes += _validation(version.get("schema"), status_enabled, f"{path}.schema")
        if not shared_subresources:
            causes += _subresources(sub, f"{path}.subresources")
        if not shared_columns:
            causes += _columns(version.get("additionalPrinterColumns"), f"{path}.additionalPrinterColumns")
        if not shared_selectable and version.get("selectableFields"):
            causes += _selectable_fields(version, f"{path}.selectableFields",
                                         "may only be set when `version.schema.openAPIV3Schema` is not included")
        if not _has_schema(version.get("schema")) and not (shared_schema and _has_schema(schemas[0] if schemas
                                                                                          else None)):
            causes.append(v.required(f"{path}.schema.openAPIV3Schema"))
    if shared_schema:
        causes += _validation(schemas[0], any_status, "spec.validation")
    if shared_subresources:
        causes += _subresources(subresources[0], "spec.subresources")
    if shared_columns:
        causes += _columns(columns[0], "spec.additionalPrinterColumns")
    if shared_selectable and selectable[0]:
        causes += _selectable_fields(versions[0], "spec.selectableFields",
                                     "may only be set when validations.schema is included")
    if not unique:
        causes.append(v.invalid("spec.versions", versions, "must contain unique version names"))
    if storage != 1:
        causes.append(v.invalid("spec.versions", versions, "must have exactly one version marked as storage version"))
    return causes


def _has_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and isinstance(schema.get("openAPIV3Schema"), dict)


def _deprecation(version: Obj, path: str) -> Causes:
    warning = version.get("deprecationWarning")
    if warning is None:
        return []
    if version.get("deprecated") is not True:
        return [v.invalid(f"{path}.deprecationWarning", warning, "can only be set for deprecated versions")]
    if not isinstance(warning, str):
        return [v.type_invalid(f"{path}.deprecationWarning", warning, "must be a string")]
    problems = []
    if len(warning) > 256:
        problems.append("must be <= 256 characters long")
    if not warning:
        problems.append("must not be an empty string")
    for i, char in enumerate(warning):
        if not char.isprintable() or unicodedata.category(char) == "Cc":
            problems.append(f"must only contain printable UTF-8 characters; non-printable character found at index "
                            f"{len(warning[:i].encode())}")
            break
    return [v.invalid(f"{path}.deprecationWarning", warning, problem) for problem in problems]


def _validation(schema_holder: Any, status_enabled: bool, path: str) -> Causes:
    """A version's (or the shared) ``schema``: its openAPIV3Schema must be a structural schema Kubernetes serves
    (with the status subresource, only some fields may be at its root)."""
    if not isinstance(schema_holder, dict):
        return []
    schema = schema_holder.get("openAPIV3Schema")
    if schema is None:
        return []
    root = f"{path}.openAPIV3Schema"
    if not isinstance(schema, dict):
        return [v.type_invalid(root, schema, "must be an object")]
    return crdschemas.check_structural(schema, root, status_subresource=status_enabled)


def _json_path(value: Any, path: str) -> Causes:
    """validateSimpleJSONPath: a path starting with '.'."""
    if not isinstance(value, str) or not value:
        return [v.invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [v.invalid(path, value, "must be a simple json path starting with .")]
    return []


def _subresources(subresources: Any, path: str) -> Causes:
    if not isinstance(subresources, dict):
        return []
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return []
    causes: Causes = []
    spec_path = scale.get("specReplicasPath")
    if not spec_path:
        causes.append(v.required(f"{path}.scale.specReplicasPath"))
    elif not (errs := _json_path(spec_path, f"{path}.scale.specReplicasPath")):
        if not str(spec_path).startswith(".spec."):
            causes.append(v.invalid(f"{path}.scale.specReplicasPath", spec_path, "should be a json path under .spec"))
    else:
        causes += errs
    status_path = scale.get("statusReplicasPath")
    if not status_path:
        causes.append(v.required(f"{path}.scale.statusReplicasPath"))
    elif not (errs := _json_path(status_path, f"{path}.scale.statusReplicasPath")):
        if not str(status_path).startswith(".status."):
            causes.append(v.invalid(f"{path}.scale.statusReplicasPath", status_path,
                                    "should be a json path under .status"))
    else:
        causes += errs
    selector = scale.get("labelSelectorPath")
    if selector:
        if errs := _json_path(selector, f"{path}.scale.labelSelectorPath"):
            causes += errs
        elif not str(selector).startswith((".spec.", ".status.")):
            causes.append(v.invalid(f"{path}.scale.labelSelectorPath", selector,
                                    "should be a json path under either .spec or .status"))
    return causes


def _columns(columns: Any, path: str) -> Causes:
    causes: Causes = []
    for i, column in enumerate(columns if isinstance(columns, list) else []):
        at = f"{path}[{i}]"
        if not isinstance(column, dict):
            causes.append(v.type_invalid(at, column, "must be an object"))
            continue
        if not column.get("name"):
            causes.append(v.required(f"{at}.name"))
        type_ = column.get("type")
        allowed = f"must be one of {','.join(PRINTER_COLUMN_TYPES)}"
        if not type_:
            causes.append(v.required(f"{at}.type", allowed))
        elif type_ not in PRINTER_COLUMN_TYPES:
            causes.append(v.invalid(f"{at}.type", type_, allowed))
        format_ = column.get("format")
        if format_ and format_ not in PRINTER_COLUMN_FORMATS:
            causes.append(v.invalid(f"{at}.format", format_, f"must be one of {','.join(PRINTER_COLUMN_FORMATS)}"))
        json_path = column.get("jsonPath")
        if not json_path:
            causes.append(v.required(f"{at}.JSONPath"))
        else:
            causes += _json_path(json_path, f"{at}.JSONPath")
    return causes


def _selectable_fields(version: Obj, path: str, without_schema: str) -> Causes:
    schema = dict_at(version.get("schema"), "openAPIV3Schema")
    if not schema:
        return [v.invalid(path, "", without_schema)]
    causes: Causes = []
    unique: list[str] = []
    for i, entry in enumerate(list_at(version, "selectableFields")):
        at = f"{path}[{i}].jsonPath"
        json_path = entry.get("jsonPath") if isinstance(entry, dict) else None
        if not json_path:
            causes.append(v.required(at))
            continue
        found, problem = _field_schema(str(json_path), schema)
        if problem:
            causes.append(v.invalid(at, json_path, f"is an invalid path: {problem}"))
            continue
        if str(json_path).lstrip(".").split(".")[0] == "metadata":
            causes.append(v.invalid(at, json_path, "must not point to fields in metadata"))
        if not isinstance(found, dict) or found.get("type") not in ("string", "boolean", "integer"):
            causes.append(v.invalid(at, json_path, "must point to a field of type string, boolean or integer. Enum "
                                                   "string fields and strings with formats are allowed."))
        normal = str(json_path).lstrip(".")
        if normal in unique:
            causes.append(v.duplicate(at, json_path))
        else:
            unique.append(normal)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        causes.append(Cause(path, "FieldValueTooMany",
                              f"Too many: {len(unique)}: must have at most {MAX_SELECTABLE_FIELDS} items"))
    return causes


def _field_schema(json_path: str, schema: Obj) -> tuple[Any, str]:
    """The schema of the field a selectable field's path names, or why it names none."""
    if "[" in json_path:
        return None, "array notation is not allowed"
    current: Any = schema
    for part in json_path.lstrip(".").split("."):
        if not part:
            return None, "does not refer to a valid field"
        properties = current.get("properties") if isinstance(current, dict) else None
        if isinstance(properties, dict) and part in properties:
            current = properties[part]
            continue
        additional = current.get("additionalProperties") if isinstance(current, dict) else None
        if isinstance(additional, dict):
            current = additional
            continue
        return None, "does not refer to a valid field"
    return current, ""


def validate_names(names: Obj, path: str) -> Causes:
    """ValidateCustomResourceDefinitionNames: spec.names and status.acceptedNames."""
    causes: Causes = []
    for key in ("plural", "singular"):
        value = names.get(key)
        if value and (not isinstance(value, str) or (errs := v.is_dns1035_label(value))):
            causes.append(v.invalid(f"{path}.{key}", value, ",".join(errs) if isinstance(value, str) else
                                    "must be a string"))
    for key in ("kind", "listKind"):
        value = names.get(key)
        if value and (not isinstance(value, str) or (errs := v.is_dns1035_label(value.lower()))):
            detail = "may have mixed case, but should otherwise match: " + (",".join(errs) if isinstance(value, str)
                                                                             else "a string")
            causes.append(v.invalid(f"{path}.{key}", value, detail))
    for i, short in enumerate(list_at(names, "shortNames")):
        if not isinstance(short, str) or (errs := v.is_dns1035_label(short)):
            causes.append(v.invalid(f"{path}.shortNames[{i}]", short, ",".join(errs) if isinstance(short, str) else
                                    "must be a string"))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(v.invalid(f"{path}.listKind", names.get("listKind"), "kind and listKind may not be the same"))
    for i, category in enumerate(list_at(names, "categories")):
        if not isinstance(category, str) or (errs := v.is_dns1035_label(category)):
            causes.append(v.invalid(f"{path}.categories[{i}]", category, ",".join(errs) if isinstance(category, str)
                                    else "must be a string"))
    return causes


# -- conversion -----------------------------------------------------------------------------------------------------
def _conversion(spec: Obj) -> Causes:
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        return []
    path = "spec.conversion"
    strategy = conversion.get("strategy")
    causes: Causes = []
    if not strategy:
        causes.append(v.required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        causes.append(v.not_supported(f"{path}.strategy", strategy, ("None", "Webhook")))
    webhook = conversion.get("webhook")
    client = dict_at(webhook, "clientConfig") if isinstance(webhook, dict) else {}
    review_versions = list_at(webhook, "conversionReviewVersions") if isinstance(webhook, dict) else []
    if strategy == "Webhook":
        if spec.get("preserveUnknownFields") is True:
            causes.append(v.invalid(f"{path}.strategy", strategy, "must be None if spec.preserveUnknownFields is true"))
        if not client:
            causes.append(v.required(f"{path}.webhookClientConfig", "required when strategy is set to Webhook"))
        else:
            url, service = client.get("url"), client.get("service")
            if (url is None) == (service is None):
                causes.append(v.required(f"{path}.webhookClientConfig", "exactly one of url or service is required"))
            elif url is not None:
                causes += validate_webhook_url(f"{path}.webhookClientConfig.url", url)
            else:
                causes += validate_webhook_service(f"{path}.webhookClientConfig.service", service)
        causes += _review_versions(review_versions, f"{path}.conversionReviewVersions")
    else:
        if client:
            causes.append(v.forbidden(f"{path}.webhookClientConfig", "should not be set when strategy is not set to "
                                                                     "Webhook"))
        if review_versions:
            causes.append(v.forbidden(f"{path}.conversionReviewVersions", "should not be set when strategy is not "
                                                                          "set to Webhook"))
    return causes


def _review_versions(versions: list[Any], path: str) -> Causes:
    if not versions:
        return [v.required(path)]
    causes: Causes = []
    seen: set[Any] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append(v.invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        for problem in v.is_dns1035_label(version) if isinstance(version, str) else ["must be a string"]:
            causes.append(v.invalid(f"{path}[{i}]", version, problem))
    if not any(version in CONVERSION_REVIEW_VERSIONS for version in versions):
        causes.append(v.invalid(path, versions, f"must include at least one of {', '.join(CONVERSION_REVIEW_VERSIONS)}"))
    return causes


_URL_FORM = "; desired format: https://host[/path]"


def validate_webhook_url(path: str, url: Any) -> Causes:
    """A webhook's clientConfig.url: https, a host, no user, query or fragment."""
    if not isinstance(url, str):
        return [v.required(path, "url must be a valid URL: not a string" + _URL_FORM)]
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return [v.required(path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    causes: Causes = []
    if parts.scheme != "https":
        causes.append(v.invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    if not parts.hostname:
        causes.append(v.invalid(path, parts.hostname or "", "host must be specified" + _URL_FORM))
    if parts.username is not None:
        causes.append(v.invalid(path, parts.username, "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(v.invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(v.invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def validate_webhook_service(path: str, service: Any) -> Causes:
    """A webhook's clientConfig.service: name, namespace, a valid port, a path of DNS-subdomain segments."""
    if not isinstance(service, dict):
        return [v.type_invalid(path, service, "must be an object")]
    causes: Causes = []
    if not service.get("name"):
        causes.append(v.required(f"{path}.name"))
    if not service.get("namespace"):
        causes.append(v.required(f"{path}.namespace"))
    port = service.get("port", 443)
    if errs := v.is_valid_port_num(port):
        causes.append(v.invalid(f"{path}.port", port, "port is not valid: " + ", ".join(errs)))
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return causes
    if url_path == "//":
        return causes + [v.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(v.invalid(f"{path}.path", url_path, "must start with a '/'"))
    steps = url_path[1:].removesuffix("/").split("/")
    for i, step in enumerate(steps):
        if not step:
            causes.append(v.invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
            continue
        for failure in v.is_dns1123_subdomain(step):
            causes.append(v.invalid(f"{path}.path", url_path, f"segment[{i}]: {failure}"))
    return causes


# -- update, status, approval ---------------------------------------------------------------------------------------
def _spec_update(spec: Obj, old: Obj, established: bool) -> Causes:
    causes: Causes = []
    if established:
        causes += v.validate_immutable(spec.get("scope"), old.get("scope"), "spec.scope")
        causes += v.validate_immutable(dict_at(spec, "names").get("kind"), dict_at(old, "names").get("kind"),
                                       "spec.names.kind")
    causes += v.validate_immutable(spec.get("group"), old.get("group"), "spec.group")
    causes += v.validate_immutable(dict_at(spec, "names").get("plural"), dict_at(old, "names").get("plural"),
                                   "spec.names.plural")
    return causes


def _status(status: Obj) -> Causes:
    return validate_names(dict_at(status, "acceptedNames"), "status.acceptedNames")


def _stored_versions(crd: Obj) -> Causes:
    path = "status.storedVersions"
    stored = list_at(dict_at(crd, "status"), "storedVersions")
    if not stored:
        return [v.invalid(path, stored, "must have at least one stored version")]
    causes: Causes = []
    names = []
    for version in dicts_at(dict_at(crd, "spec"), "versions"):
        names.append(version.get("name"))
        if version.get("storage") is True and version.get("name") not in stored:
            causes.append(v.invalid(path, stored, f"must have the storage version {version.get('name')}"))
    for i, version in enumerate(stored):
        if version not in names:
            causes.append(v.invalid(f"{path}[{i}]", version, f"missing from spec.versions; {version} was previously a "
                                    f"storage version, and must remain in spec.versions until a storage migration "
                                    f"ensures no data remains persisted in {version} and removes {version} from "
                                    f"status.storedVersions"))
    return causes


def _approval_state(annotations: Obj) -> tuple[str, str]:
    value = annotations.get(APPROVAL_ANNOTATION) or ""
    if not value:
        return "missing", (f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", see '
                           f"https://github.com/kubernetes/enhancements/pull/1111")
    if str(value).startswith("unapproved"):
        return "bypassed", f'not approved: "{value}"'
    parts = urlsplit(str(value))
    if parts.scheme and parts.netloc:
        return "approved", f"approved in {value}"
    return "invalid", (f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}" with either a URL or '
                       f'a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111')


def _protected(group: Any) -> bool:
    return isinstance(group, str) and (group in ("k8s.io", "kubernetes.io") or
                                       group.endswith((".k8s.io", ".kubernetes.io")))


def _api_approval(crd: Obj, old: Obj | None) -> Causes:
    """Groups under k8s.io and kubernetes.io need the api-approved.kubernetes.io annotation."""
    if not _protected(dict_at(crd, "spec").get("group")):
        return []
    state, reason = _approval_state(dict_at(dict_at(crd, "metadata"), "annotations"))
    if old is not None and _approval_state(dict_at(dict_at(old, "metadata"), "annotations"))[0] == state:
        return []
    path = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
    if state == "missing":
        return [v.required(path, reason)]
    if state == "invalid":
        return [v.invalid(path, dict_at(dict_at(crd, "metadata"), "annotations").get(APPROVAL_ANNOTATION), reason)]
    return []
