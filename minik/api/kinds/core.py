"""The core (v1) group: Namespace, Node, Event, ConfigMap, Secret, ServiceAccount, ReplicationController; Pod,
Service and Endpoints live in their own modules and are re-exported here."""

from __future__ import annotations

import base64
import copy
import ipaddress
from typing import Any

from minik.api import gobytes
from minik.api import validation as v
from minik.api.kinds.common import (
    SELECTOR_MISMATCH,
    Causes,
    Obj,
    dict_at,
    dicts_at,
    ensure_dict,
    expect_object,
    labels_of,
    validate_restart_always,
)
from minik.api.kinds.pods import PodStrategy
from minik.api.kinds.podspec import default_pod_template
from minik.api.kinds.podvalidation import TAINT_EFFECTS, validate_pod_template
from minik.api.kinds.services import EndpointsStrategy, ServiceStrategy
from minik.api.selectors import selector_from_set
from minik.api.strategy import Strategy

__all__ = ["NamespaceStrategy", "NodeStrategy", "PodStrategy", "ServiceStrategy", "EndpointsStrategy",
           "EventStrategy", "ConfigMapStrategy", "SecretStrategy", "ServiceAccountStrategy",
           "ReplicationControllerStrategy"]

METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
MAX_SECRET_SIZE = 1024 * 1024


class NamespaceStrategy(Strategy):
    name_rule = "label"
    namespace_scoped = False
    has_status = True

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"phase": "Active"}

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        spec = ensure_dict(obj, "spec")
        if spec is not None:
            finalizers = spec.get("finalizers")
            if not isinstance(finalizers, list):
                spec["finalizers"] = finalizers = []
            if "kubernetes" not in finalizers:
                finalizers.append("kubernetes")

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        """spec.finalizers only change through the finalize subresource."""
        super().prepare_for_update(obj, old)
        if "spec" in old:
            obj["spec"] = copy.deepcopy(old["spec"])
        else:
            obj.pop("spec", None)

    def prepare_for_finalize(self, obj: Obj, old: Obj) -> None:
        """A write to namespaces/NAME/finalize: the new spec (finalizers) and metadata, the old status."""
        Strategy.prepare_for_update(self, obj, old)

    def prepare_for_delete(self, obj: Obj) -> bool:
        """A deleted namespace turns Terminating and stays until the namespace controller has emptied it and
        removed its spec.finalizers."""
        status = obj.get("status")
        if not isinstance(status, dict):
            obj["status"] = status = {}
        status["phase"] = "Terminating"
        return self.holds_deletion(obj)

    def holds_deletion(self, obj: Obj) -> bool:
        return bool(dict_at(obj, "spec").get("finalizers"))

    def default(self, obj: Obj) -> None:
        meta = obj.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
            labels = ensure_dict(meta, "labels")
            if labels is not None:
                labels[METADATA_NAME_LABEL] = meta["name"]

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        finalizers = dict_at(obj, "spec").get("finalizers") or []
        for finalizer in finalizers if isinstance(finalizers, list) else []:
            causes += [v.invalid("spec.finalizers", finalizer, m) for m in v.is_qualified_name(str(finalizer))]
            if "/" not in str(finalizer) and finalizer not in STANDARD_FINALIZERS:
                causes.append(v.invalid("spec.finalizers", finalizer,
                                        "name is neither a standard finalizer name nor is it fully qualified"))
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.phase"] = str(dict_at(obj, "status").get("phase") or "")
        return fields


class NodeStrategy(Strategy):
    namespace_scoped = False
    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        """A kubelet registers its node with its status: unlike other kinds, create keeps it."""

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if spec is not None and not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        spec = spec or {}
        seen: set[tuple[Any, Any]] = set()
        for i, taint in enumerate(dicts_at(spec, "taints")):
            at = v.index("spec.taints", i)
            key = str(taint.get("key") or "")
            causes += [v.invalid(v.child(at, "key"), key, m) for m in v.is_qualified_name(key)]
            if msgs := v.is_valid_label_value(str(taint.get("value") or "")):
                causes.append(v.invalid(v.child(at, "value"), taint.get("value"), ";".join(msgs)))
            causes += v.validate_enum(taint.get("effect"), v.child(at, "effect"), TAINT_EFFECTS)
            if (key, taint.get("effect")) in seen:
                causes.append(v.duplicate(at, taint, "taints must be unique by key and effect pair"))
            seen.add((key, taint.get("effect")))
        cidrs = list(spec.get("podCIDRs") or []) + ([spec["podCIDR"]] if spec.get("podCIDR") else [])
        for cidr in cidrs:
            try:
                ipaddress.ip_network(str(cidr), strict=False)
            except ValueError:
                causes.append(v.invalid("spec.podCIDRs", cidr, "must be a valid CIDR"))
        if spec.get("unschedulable") not in (None, True, False):
            causes.append(v.type_invalid("spec.unschedulable", spec["unschedulable"], "must be a boolean"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        """Node updates may change labels and annotations, taints, unschedulable, and set podCIDR(s) and
        providerID once."""
        causes = super().validate_update(obj, old)
        spec, old_spec = copy.deepcopy(dict_at(obj, "spec")), dict_at(old, "spec")
        for key, what in (("podCIDR", "podCIDR"), ("podCIDRs", "podCIDR"), ("providerID", "providerID")):
            if old_spec.get(key) and spec.get(key) != old_spec.get(key):
                causes.append(v.forbidden(f"spec.{'podCIDRs' if what == 'podCIDR' else key}",
                                          f'node updates may not change {what} except from "" to valid'))
        for key in ("taints", "unschedulable", "podCIDR", "podCIDRs", "providerID", "configSource"):
            spec.pop(key, None)
        rest = {k: val for k, val in old_spec.items()
                if k not in ("taints", "unschedulable", "podCIDR", "podCIDRs", "providerID", "configSource")}
        if spec != rest:
            causes.append(v.forbidden("", "node updates may only change labels, taints, or capacity (or "
                                          "configSource, if the DynamicKubeletConfig feature gate is enabled)"))
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["spec.unschedulable"] = "true" if dict_at(obj, "spec").get("unschedulable") is True else "false"
        return fields


class EventStrategy(Strategy):
    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        namespace = dict_at(obj, "metadata").get("namespace") or ""
        involved = dict_at(obj, "involvedObject")
        involved_ns = involved.get("namespace") or ""
        if not obj.get("eventTime"):
            if (involved_ns and involved_ns != namespace) or (not involved_ns and namespace not in ("", "default")):
                causes.append(v.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
            return causes
        for field, limit in (("reportingComponent", 0), ("reportingInstance", 128), ("action", 128),
                             ("reason", 128)):
            value = str(obj.get(field) or "")
            if not value:
                causes.append(v.required(field))
            elif limit and len(value) > limit:
                causes.append(v.invalid(field, "", f"can have at most {limit} characters"))
        if obj.get("reportingComponent"):
            causes += [v.invalid("reportingComponent", obj["reportingComponent"], m)
                       for m in v.is_qualified_name(str(obj["reportingComponent"]))]
        if len(str(obj.get("message") or "")) > 1024:
            causes.append(v.invalid("message", "", "can have at most 1024 characters"))
        if obj.get("type") not in ("Normal", "Warning"):
            causes.append(v.invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
        return causes

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        involved = dict_at(obj, "involvedObject")
        for key in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            fields[f"involvedObject.{key}"] = str(involved.get(key) or "")
        fields["reason"] = str(obj.get("reason") or "")
        fields["reportingComponent"] = str(obj.get("reportingComponent") or "")
        fields["source"] = str(dict_at(obj, "source").get("component") or obj.get("reportingComponent") or "")
        fields["type"] = str(obj.get("type") or "")
        return fields


def _validate_immutable_data(obj: Obj, old: Obj) -> Causes:
    """ConfigMaps and Secrets marked ``immutable: true`` keep their data (and their immutability) forever."""
    if old.get("immutable") is not True:
        return []
    causes: Causes = []
    if obj.get("immutable") is not True:
        causes.append(v.forbidden("immutable", "field is immutable when `immutable` is set"))
    for field in ("data", "binaryData", "stringData"):
        if (obj.get(field) or {}) != (old.get(field) or {}):
            causes.append(v.forbidden(field, "field is immutable when `immutable` is set"))
    return causes


def _data_keys(obj: Obj, field: str) -> tuple[dict[str, Any], Causes]:
    data = obj.get(field)
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {}, [v.type_invalid(field, data, "must be a map of string to string")]
    causes = [v.invalid(v.index(field, key), key, m) for key in data for m in v.is_config_map_key(key)]
    return data, causes


class ConfigMapStrategy(Strategy):
    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        data, data_causes = _data_keys(obj, "data")
        binary, binary_causes = _data_keys(obj, "binaryData")
        causes += data_causes + binary_causes
        total = 0
        for key, value in data.items():
            if key in binary:
                causes.append(v.invalid(v.index("data", key), key, "duplicate of key present in binaryData"))
            total += len(str(value).encode())
        for key, value in binary.items():
            decoded = _decode(value)
            if decoded is None:
                causes.append(v.invalid(v.index("binaryData", key), "<value omitted>", "must be base64 encoded"))
            else:
                total += len(decoded)
        if total > MAX_SECRET_SIZE:
            causes.append(v.too_long("", MAX_SECRET_SIZE))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return super().validate_update(obj, old) + _validate_immutable_data(obj, old)


def _decode(value: Any) -> bytes | None:
    """The bytes of a []byte field's base64 (line breaks skipped, as Go's decoder skips them), None if it has none.
    The API server's decoding walk refuses bad base64 first, as Kubernetes' decoder does; this catches what
    reaches a strategy some other way."""
    if not isinstance(value, str):
        return None
    try:
        return gobytes.decode(value)
    except ValueError:
        return None


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


class SecretStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        """``stringData`` is a write-only convenience: merged into ``data`` (base64) and dropped, as Kubernetes'
        conversion does; the type defaults to Opaque."""
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict) and string_data:
            data = ensure_dict(obj, "data")
            if data is not None:
                for key, value in string_data.items():
                    data[key] = base64.b64encode(str(value).encode()).decode()
        if obj.get("type") in (None, ""):
            obj["type"] = "Opaque"

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        data, key_causes = _data_keys(obj, "data")
        causes += key_causes
        total = 0
        for key, value in data.items():
            decoded = _decode(value)
            if decoded is None:
                causes.append(v.invalid(v.index("data", key), "<secret contents redacted>",
                                        "must be a base64 encoded string"))
            else:
                total += len(decoded)
        if total > MAX_SECRET_SIZE:
            causes.append(v.too_long("data", MAX_SECRET_SIZE))
        kind = obj.get("type")
        for key in _SECRET_REQUIRED_KEYS.get(str(kind), ()):
            if key not in data:
                causes.append(v.required(v.index("data", key)))
        if kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
            causes.append(v.required(v.index("data", "username")))
            causes.append(v.required(v.index("data", "password")))
        if kind == "kubernetes.io/service-account-token" and \
                not dict_at(dict_at(obj, "metadata"), "annotations").get("kubernetes.io/service-account.name"):
            causes.append(v.required("metadata.annotations[kubernetes.io/service-account.name]"))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        return super().validate_update(obj, old) + v.validate_immutable(obj.get("type"), old.get("type"), "type") + \
            _validate_immutable_data(obj, old)

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["type"] = str(obj.get("type") or "")
        return fields


class ServiceAccountStrategy(Strategy):
    pass


class ReplicationControllerStrategy(Strategy):
    has_status = True
    tracks_generation = True
    orphans_dependents_by_default = True  # core/v1 and batch/v1 keep the old default

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"replicas": 0}

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is None:
            return
        template = spec.get("template")
        labels = labels_of(template) if isinstance(template, dict) else {}
        if labels:
            if not spec.get("selector"):
                spec["selector"] = dict(labels)
            meta = ensure_dict(obj, "metadata")
            if meta is not None and not meta.get("labels"):
                meta["labels"] = dict(labels)
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        if isinstance(template, dict):
            default_pod_template(spec)

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        causes += v.validate_nonnegative(spec.get("replicas"), "spec.replicas")
        causes += v.validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        selector = spec.get("selector")
        if not selector:
            causes.append(v.required("spec.selector"))
        else:
            causes += v.validate_labels(selector, "spec.selector")
        template = spec.get("template")
        if template is None:
            return causes + [v.required("spec.template")]
        if isinstance(selector, dict) and all(isinstance(x, str) for x in selector.values()) and selector and \
                not selector_from_set(selector).matches(labels_of(template)):
            causes.append(v.invalid("spec.template.metadata.labels", labels_of(template), SELECTOR_MISMATCH))
        causes += validate_pod_template(template, "spec.template")
        return causes + validate_restart_always(template, "spec.template", "ReplicationController")

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.replicas"] = str(dict_at(obj, "status").get("replicas") or 0)
        return fields
