"""Pod spec validation (Kubernetes' ValidatePodSpec and friends), for pods and every workload's pod template."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, expect_object, list_at
from minik.api.kinds.podspec import PROBES, VOLUME_SOURCES
from minik.api.kinds.specmemo import SpecMemo
from minik.api.kinds.storage import validate_claim_spec
from minik.api.quantity import parse_quantity

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
PROTOCOLS = ("SCTP", "TCP", "UDP")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
MAX_INT32 = 2 ** 31 - 1
_ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
_NATIVE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def validate_port_num_or_name(port: Any, path: str) -> Causes:
    """An IntOrString port: a number 1-65535 or an IANA service name."""
    if isinstance(port, str):
        return [v.invalid(path, port, m) for m in v.is_valid_port_name(port)]
    return [v.invalid(path, port, m) for m in v.is_valid_port_num(port)]


def _validate_ports(ports: list[Any], path: str) -> Causes:
    causes: Causes = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        at = v.index(path, i)
        if not isinstance(port, dict):
            causes.append(v.type_invalid(at, port, "must be an object"))
            continue
        name = port.get("name")
        if name:
            if msgs := v.is_valid_port_name(str(name)):
                causes += [v.invalid(v.child(at, "name"), name, m) for m in msgs]
            elif name in names:
                causes.append(v.duplicate(v.child(at, "name"), name))
            names.add(str(name))
        if not port.get("containerPort"):
            causes.append(v.required(v.child(at, "containerPort")))
        else:
            causes += [v.invalid(v.child(at, "containerPort"), port["containerPort"], m)
                       for m in v.is_valid_port_num(port["containerPort"])]
        if port.get("hostPort"):
            causes += [v.invalid(v.child(at, "hostPort"), port["hostPort"], m)
                       for m in v.is_valid_port_num(port["hostPort"])]
        causes += v.validate_enum(port.get("protocol"), v.child(at, "protocol"), PROTOCOLS)
    return causes


def _validate_env(env: list[Any], path: str) -> Causes:
    causes: Causes = []
    for i, var in enumerate(env):
        at = v.index(path, i)
        if not isinstance(var, dict):
            causes.append(v.type_invalid(at, var, "must be an object"))
            continue
        name = var.get("name")
        if not name:
            causes.append(v.required(v.child(at, "name")))
        else:
            causes += [v.invalid(v.child(at, "name"), name, m) for m in v.is_env_var_name(str(name))]
        value_from = var.get("valueFrom")
        if isinstance(value_from, dict):
            causes += _validate_value_from(value_from, var, v.child(at, "valueFrom"))
    return causes


def _validate_value_from(value_from: Obj, var: Obj, path: str) -> Causes:
    sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
               if isinstance(value_from.get(k), dict)]
    if not sources:
        return [v.invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                                    "`secretKeyRef`")]
    causes: Causes = []
    if var.get("value"):
        causes.append(v.invalid(path, "", "may not be specified when `value` is not empty"))
    if len(sources) > 1:
        causes.append(v.invalid(path, "", "may not have more than one field specified at a time"))
    for source in sources:
        body, at = value_from[source], v.child(path, source)
        if source in ("configMapKeyRef", "secretKeyRef"):
            if not body.get("name"):
                causes.append(v.required(v.child(at, "name")))
            if not body.get("key"):
                causes.append(v.required(v.child(at, "key")))
            else:
                causes += [v.invalid(v.child(at, "key"), body["key"], m) for m in v.is_config_map_key(str(body["key"]))]
        elif source == "fieldRef":
            field_path = body.get("fieldPath")
            if not field_path:
                causes.append(v.required(v.child(at, "fieldPath")))
            elif isinstance(field_path, str) and field_path.startswith(("metadata.labels[", "metadata.annotations[")):
                key = field_path.partition("[")[2].rstrip("]").strip("'")
                causes += [v.invalid(at, key, m) for m in v.is_qualified_name(key)]
            elif field_path not in _ENV_FIELD_PATHS:
                causes.append(v.not_supported(at, field_path, sorted(_ENV_FIELD_PATHS + (
                    "metadata.annotations", "metadata.labels"))))
        elif not body.get("resource"):
            causes.append(v.required(v.child(at, "resource")))
    return causes


def _validate_volume_mounts(mounts: list[Any], volumes: set[str], path: str) -> Causes:
    causes: Causes = []
    mount_paths: set[str] = set()
    for i, mount in enumerate(mounts):
        at = v.index(path, i)
        if not isinstance(mount, dict):
            causes.append(v.type_invalid(at, mount, "must be an object"))
            continue
        name = mount.get("name") or ""
        if not name:
            causes.append(v.required(v.child(at, "name")))
        if name not in volumes:
            causes.append(v.not_found(v.child(at, "name"), name))
        mount_path = mount.get("mountPath") or ""
        if not mount_path:
            causes.append(v.required(v.child(at, "mountPath")))
        elif mount_path in mount_paths:
            causes.append(v.invalid(v.child(at, "mountPath"), mount_path, "must be unique"))
        mount_paths.add(str(mount_path))
    return causes


def _validate_resources(resources: Any, path: str) -> Causes:
    if not isinstance(resources, dict):
        return expect_object(resources, path, required=False)
    causes: Causes = []
    parsed: dict[str, dict[str, Any]] = {}
    for kind in ("limits", "requests"):
        at = v.child(path, kind)
        values = resources.get(kind)
        if values is None:
            continue
        if not isinstance(values, dict):
            causes.append(v.type_invalid(at, values, "must be a map of resource name to quantity"))
            continue
        parsed[kind] = {}
        for name, quantity in values.items():
            key_at = v.index(at, name)
            if "/" not in name and name not in _NATIVE_RESOURCES and not name.startswith("hugepages-"):
                causes.append(v.invalid(key_at, name, "must be a standard resource for containers"))
            else:
                causes += [v.invalid(key_at, name, m) for m in v.is_qualified_name(name)]
            try:
                amount = parse_quantity(quantity)
            except ValueError as exc:
                causes.append(v.invalid(key_at, quantity, str(exc)))
                continue
            if amount < 0:
                causes.append(v.invalid(key_at, quantity, "must be greater than or equal to 0"))
            parsed[kind][name] = (amount, quantity)
    limits, requests = parsed.get("limits", {}), parsed.get("requests", {})
    for name, (amount, text) in requests.items():
        overcommit = "/" not in name or "kubernetes.io/" in name
        overcommit = overcommit and not name.startswith("hugepages-")
        if name in limits:
            limit, limit_text = limits[name]
            if not overcommit and amount != limit:
                causes.append(v.invalid(v.child(path, "requests"), str(text),
                                        f"must be equal to {name} limit of {limit_text}"))
            elif amount > limit:
                causes.append(v.invalid(v.child(path, "requests"), str(text),
                                        f"must be less than or equal to {name} limit of {limit_text}"))
        elif not overcommit:
            causes.append(v.required(v.child(path, "limits"), "Limit must be set for non overcommitable resources"))
    return causes


def _validate_probe(probe: Any, path: str, must_succeed_once: bool) -> Causes:
    if probe is None:
        return []
    if not isinstance(probe, dict):
        return [v.type_invalid(path, probe, "must be an object")]
    handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(h) is not None]
    causes: Causes = []
    if not handlers:
        causes.append(v.required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        causes.append(v.forbidden(v.child(path, extra), "may not specify more than 1 handler type"))
    for name in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        causes += v.validate_nonnegative(probe.get(name), v.child(path, name))
    if must_succeed_once and probe.get("successThreshold") not in (None, 1):
        causes.append(v.invalid(v.child(path, "successThreshold"), probe["successThreshold"], "must be 1"))
    http = dict_at(probe, "httpGet")
    if http:
        causes += validate_port_num_or_name(http.get("port"), v.child(path, "httpGet", "port"))
        causes += v.validate_enum(http.get("scheme"), v.child(path, "httpGet", "scheme"), ("HTTP", "HTTPS"))
    tcp = dict_at(probe, "tcpSocket")
    if tcp:
        causes += validate_port_num_or_name(tcp.get("port"), v.child(path, "tcpSocket", "port"))
    return causes


def _validate_container(c: Obj, path: str, volumes: set[str], *, init: bool, in_pod: bool) -> Causes:
    causes: Causes = []
    image = c.get("image")
    if not image:
        causes.append(v.required(v.child(path, "image")))
    elif not isinstance(image, str):
        causes.append(v.type_invalid(v.child(path, "image"), image, "must be a string"))
    elif in_pod and image != image.strip():
        causes.append(v.invalid(v.child(path, "image"), image, "must not have leading or trailing whitespace"))
    causes += v.validate_enum_field(c, "imagePullPolicy", path, PULL_POLICIES)
    causes += v.validate_enum_field(c, "terminationMessagePolicy", path, ("File", "FallbackToLogsOnError"))
    # lists a container leaves out are skipped without building their paths: creates are the hot path
    if ports := list_at(c, "ports"):
        causes += _validate_ports(ports, v.child(path, "ports"))
    if env := list_at(c, "env"):
        causes += _validate_env(env, v.child(path, "env"))
    if mounts := list_at(c, "volumeMounts"):
        causes += _validate_volume_mounts(mounts, volumes, v.child(path, "volumeMounts"))
    if c.get("resources") not in (None, {}):
        causes += _validate_resources(c.get("resources"), v.child(path, "resources"))
    restart = c.get("restartPolicy")
    sidecar = init and restart == "Always"
    if restart is not None:
        if not init:
            causes.append(v.forbidden(v.child(path, "restartPolicy"), "may not be set for non-init containers"))
        elif restart != "Always":
            causes.append(v.not_supported(v.child(path, "restartPolicy"), restart, ["Always"]))
    for name in PROBES:
        if c.get(name) is None:
            continue
        if init and not sidecar:
            causes.append(v.forbidden(v.child(path, name), "may not be set for init containers"))
        else:
            causes += _validate_probe(c.get(name), v.child(path, name), must_succeed_once=name != "readinessProbe")
    return causes


def validate_ephemeral_container_common(container: Obj, path: str, volumes: set[str]) -> Causes:
    """What an ephemeral container shares with the others (image, env, volume mounts...); the fields it may not
    set are checked, and left out, by the caller (minik.api.kinds.ephemeral)."""
    return _validate_container(container, path, volumes, init=False, in_pod=True)


#: a projected token's shortest and longest lifetime (what the TokenRequest API issues)
MIN_TOKEN_SECONDS, MAX_TOKEN_SECONDS = 600, 1 << 32


def _validate_projection(projected: Any, path: str) -> Causes:
    """A projected volume's service account token sources: one at most, a path, a lifetime the TokenRequest API
    can issue (the kubelet asks it for the token)."""
    causes: Causes = []
    tokens = 0
    for i, source in enumerate(list_at(projected, "sources")):
        token = source.get("serviceAccountToken") if isinstance(source, dict) else None
        if not isinstance(token, dict):
            continue
        at = v.child(v.index(v.child(path, "sources"), i), "serviceAccountToken")
        tokens += 1
        if tokens > 1:
            causes.append(v.forbidden(at, "may not have more than one service account token source"))
        seconds = token.get("expirationSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool):
            if seconds < MIN_TOKEN_SECONDS:
                causes.append(v.invalid(v.child(at, "expirationSeconds"), seconds,
                                        "may not specify a duration less than 10 minutes"))
            elif seconds > MAX_TOKEN_SECONDS:
                causes.append(v.invalid(v.child(at, "expirationSeconds"), seconds,
                                        "may not specify a duration larger than 2^32 seconds"))
        if not token.get("path"):
            causes.append(v.required(v.child(at, "path")))
    return causes


def _validate_volumes(volumes: list[Any], path: str) -> tuple[set[str], Causes]:
    names: set[str] = set()
    causes: Causes = []
    for i, volume in enumerate(volumes):
        at = v.index(path, i)
        if not isinstance(volume, dict):
            causes.append(v.type_invalid(at, volume, "must be an object"))
            continue
        own: Causes = []
        sources = [s for s in VOLUME_SOURCES if volume.get(s) is not None]
        if not sources:
            own.append(v.required(at, "must specify a volume type"))
        for extra in sources[1:]:
            own.append(v.forbidden(v.child(at, extra), "may not specify more than 1 volume type"))
        name = volume.get("name") or ""
        if not name:
            own.append(v.required(v.child(at, "name")))
        else:
            own += [v.invalid(v.child(at, "name"), name, m) for m in v.is_dns1123_label(str(name))]
        if name in names:
            own.append(v.duplicate(v.child(at, "name"), name))
        own += _validate_projection(volume.get("projected"), v.child(at, "projected"))
        own += _validate_claim_sources(volume, at)
        if own:
            causes += own
        else:
            names.add(name)
    return names, causes


def _validate_claim_sources(volume: Obj, path: str) -> Causes:
    """A persistentVolumeClaim source names its claim; an ephemeral one holds a valid claim template."""
    claim = volume.get("persistentVolumeClaim")
    if isinstance(claim, dict) and not claim.get("claimName"):
        return [v.required(v.child(path, "persistentVolumeClaim", "claimName"))]
    ephemeral = volume.get("ephemeral")
    if not isinstance(ephemeral, dict):
        return []
    at = v.child(path, "ephemeral", "volumeClaimTemplate")
    template = ephemeral.get("volumeClaimTemplate")
    if not isinstance(template, dict):
        return [v.required(at)]
    spec = template.get("spec")
    return validate_claim_spec(spec, v.child(at, "spec")) if isinstance(spec, dict) else [v.required(
        v.child(at, "spec"))]


def validate_tolerations(tolerations: Any, path: str) -> Causes:
    if tolerations is None:
        return []
    if not isinstance(tolerations, list):
        return [v.type_invalid(path, tolerations, "must be a list")]
    causes: Causes = []
    for i, toleration in enumerate(tolerations):
        at = v.index(path, i)
        if not isinstance(toleration, dict):
            causes.append(v.type_invalid(at, toleration, "must be an object"))
            continue
        key = toleration.get("key") or ""
        if key:
            causes += [v.invalid(v.child(at, "key"), key, m) for m in v.is_qualified_name(str(key))]
        operator = toleration.get("operator") or "Equal"
        if not key and operator != "Exists":
            causes.append(v.invalid(v.child(at, "operator"), operator,
                                    'operator must be Exists when `key` is empty, which means "match all values and '
                                    'all keys"'))
        if toleration.get("tolerationSeconds") is not None and toleration.get("effect") != "NoExecute":
            causes.append(v.invalid(v.child(at, "effect"), toleration.get("effect") or "",
                                    "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator == "Equal":
            causes += [v.invalid(v.child(at, "value"), toleration.get("value"), m)
                       for m in v.is_valid_label_value(str(toleration.get("value") or ""))]
        elif operator == "Exists":
            if toleration.get("value"):
                causes.append(v.invalid(v.child(at, "operator"), toleration.get("value"),
                                        "value must be empty when `operator` is 'Exists'"))
        else:
            causes.append(v.not_supported(v.child(at, "operator"), operator, ["Equal", "Exists"]))
        if toleration.get("effect"):
            causes += v.validate_enum(toleration["effect"], v.child(at, "effect"), TAINT_EFFECTS)
    return causes


def _validate_named(spec: Obj, path: str, field: str, check: Any) -> Causes:
    value = spec.get(field)
    if not value:
        return []
    return [v.invalid(v.child(path, field), value, m) for m in check(str(value))]


#: (path, in_pod) -> the specs found valid there; only valid ones are remembered (the paths are the code's own)
_VALID: dict[tuple[str, bool], SpecMemo[bool]] = {}


def validate_pod_spec(spec: Any, path: str, *, in_pod: bool) -> Causes:
    """A PodSpec at ``path`` ("spec", "spec.template.spec", ...). ``in_pod`` adds the rules only a Pod has. A spec
    found valid before is not walked again (minik.api.kinds.specmemo)."""
    valid = _VALID.get((path, in_pod))
    if valid is None:
        valid = _VALID[(path, in_pod)] = SpecMemo()
    key = valid.key(spec)
    if key is None:
        return _validate_pod_spec(spec, path, in_pod=in_pod)
    if valid.get(key):
        return []
    causes = _validate_pod_spec(spec, path, in_pod=in_pod)
    if not causes:
        valid.put(key, True)
    return causes


def _validate_pod_spec(spec: Any, path: str, *, in_pod: bool) -> Causes:
    if not isinstance(spec, dict):
        return expect_object(spec, path)
    volumes: set[str] = set()
    causes: Causes = []
    if declared := list_at(spec, "volumes"):
        volumes, causes = _validate_volumes(declared, v.child(path, "volumes"))
    containers = spec.get("containers")
    seen: set[str] = set()
    if not containers:
        causes.append(v.required(v.child(path, "containers")))
    for list_name in ("containers", "initContainers"):
        entries = spec.get(list_name)
        if entries is not None and not isinstance(entries, list):
            causes.append(v.type_invalid(v.child(path, list_name), entries, "must be a list"))
            continue
        for i, container in enumerate(entries or []):
            at = v.index(v.child(path, list_name), i)
            if not isinstance(container, dict):
                causes.append(v.type_invalid(at, container, "must be an object"))
                continue
            name = container.get("name") or ""
            if not name:
                causes.append(v.required(v.child(at, "name")))
            else:
                causes += [v.invalid(v.child(at, "name"), name, m) for m in v.is_dns1123_label(str(name))]
                if name in seen:
                    causes.append(v.duplicate(v.child(at, "name"), name))
                seen.add(name)
            causes += _validate_container(container, at, volumes, init=list_name == "initContainers", in_pod=in_pod)
    causes += v.validate_enum_field(spec, "restartPolicy", path, RESTART_POLICIES)
    causes += v.validate_enum_field(spec, "dnsPolicy", path, DNS_POLICIES)
    if spec.get("dnsPolicy") == "None" and not spec.get("dnsConfig"):
        causes.append(v.required(v.child(path, "dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
    if spec.get("nodeSelector") is not None:
        causes += v.validate_labels(spec.get("nodeSelector"), v.child(path, "nodeSelector"))
    for field in ("serviceAccountName", "nodeName", "schedulerName", "priorityClassName"):
        causes += _validate_named(spec, path, field, v.is_dns1123_subdomain)
    for field in ("hostname", "subdomain"):
        causes += _validate_named(spec, path, field, v.is_dns1123_label)
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not (v.is_int(deadline) and 1 <= deadline <= MAX_INT32):
        causes.append(v.invalid(v.child(path, "activeDeadlineSeconds"), deadline,
                                v.inclusive_range_error(1, MAX_INT32)))
    if spec.get("tolerations") is not None:
        causes += validate_tolerations(spec.get("tolerations"), v.child(path, "tolerations"))
    causes += v.validate_enum_field(spec, "preemptionPolicy", path, PREEMPTION_POLICIES, required_=False)
    if spec.get("ephemeralContainers") and not in_pod:
        causes.append(v.forbidden(v.child(path, "ephemeralContainers"),
                                  "ephemeral containers not allowed in pod template"))
    return causes


def validate_pod_template(template: Any, path: str) -> Causes:
    """A PodTemplateSpec: its labels and annotations (Kubernetes names them ``<path>.labels``) and its spec."""
    if not isinstance(template, dict):
        return expect_object(template, path)
    meta = dict_at(template, "metadata")
    causes = v.validate_labels(meta.get("labels"), v.child(path, "labels"))
    causes += v.validate_annotations(meta.get("annotations"), v.child(path, "annotations"))
    return causes + validate_pod_spec(template.get("spec"), v.child(path, "spec"), in_pod=False)


def template_spec(owner_spec: Any) -> Obj:
    return dict_at(dict_at(owner_spec, "template"), "spec")



def validate_resource_requirements(resources: Any, path: str) -> Causes:
    """A ResourceRequirements (limits and requests), as a container's are validated (a RuntimeClass's overhead
    is validated as one holding limits only)."""
    return _validate_resources(resources, path)
