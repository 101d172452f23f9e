"""Services and Endpoints."""

from __future__ import annotations

from typing import Any

from minik.api import validation as v
from minik.api.kinds.common import Causes, Obj, dict_at, dicts_at, ensure_dict, expect_object, list_at, set_default
from minik.api.kinds.podvalidation import PROTOCOLS, validate_port_num_or_name
from minik.api.strategy import Strategy

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
NODE_PORT_RANGE = (30000, 32767)
DEFAULT_CLIENT_IP_TIMEOUT = 10800


def is_headless(service: Obj) -> bool:
    return dict_at(service, "spec").get("clusterIP") == "None"


class ServiceStrategy(Strategy):
    has_status = True
    name_rule = "dns1035"
    return_deleted_object = True

    def initial_status(self, obj: Obj) -> Obj | None:
        return {"loadBalancer": {}}

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        """Keep what the server allocated (cluster IPs, node ports) when a client sends the object without them,
        as Kubernetes' patchAllocatedValues does."""
        super().prepare_for_update(obj, old)
        spec, old_spec = obj.get("spec"), dict_at(old, "spec")
        if not isinstance(spec, dict):
            return
        if spec.get("type", "ClusterIP") != "ExternalName" and old_spec.get("type", "ClusterIP") != "ExternalName":
            for key in ("clusterIP", "clusterIPs", "ipFamilies"):
                if not spec.get(key) and old_spec.get(key):
                    spec[key] = old_spec[key]
        if spec.get("type") in ("NodePort", "LoadBalancer") and old_spec.get("type") in ("NodePort", "LoadBalancer"):
            old_ports = {(p.get("port"), p.get("protocol", "TCP")): p for p in dicts_at(old_spec, "ports")}
            for port in dicts_at(spec, "ports"):
                previous = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
                if previous and not port.get("nodePort") and previous.get("nodePort"):
                    port["nodePort"] = previous["nodePort"]
        self._drop_type_dependent_fields(spec, old_spec)

    @staticmethod
    def _drop_type_dependent_fields(spec: Obj, old_spec: Obj) -> None:
        """A type change clears what the old type had allocated, when the client left it as it was (Kubernetes'
        dropTypeDependentFields): node ports when leaving NodePort/LoadBalancer, the cluster IPs when becoming
        ExternalName. A value the client changed stays, and validation judges it."""
        kind, old_kind = spec.get("type", "ClusterIP"), old_spec.get("type", "ClusterIP")
        if kind == old_kind:
            return
        node_port_kinds = ("NodePort", "LoadBalancer")
        if old_kind in node_port_kinds and kind not in node_port_kinds:
            old_node_ports = [p.get("nodePort") for p in dicts_at(old_spec, "ports")]
            new_node_ports = [p.get("nodePort") for p in dicts_at(spec, "ports")]
            if all(n in old_node_ports for n in new_node_ports if n):
                for port in dicts_at(spec, "ports"):
                    port.pop("nodePort", None)
            for key in ("externalTrafficPolicy", "healthCheckNodePort"):
                if spec.get(key) == old_spec.get(key):
                    spec.pop(key, None)
        if kind == "ExternalName" and old_kind != "ExternalName":
            if spec.get("clusterIP") in (None, "", old_spec.get("clusterIP")) and \
                    spec.get("clusterIPs") in (None, [], old_spec.get("clusterIPs")):
                for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"):
                    spec.pop(key, None)

    def default(self, obj: Obj) -> None:
        spec = ensure_dict(obj, "spec")
        if spec is None:
            return
        set_default(spec, "type", "ClusterIP")
        set_default(spec, "sessionAffinity", "None")
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            config = ensure_dict(spec, "sessionAffinityConfig")
            client_ip = ensure_dict(config, "clientIP") if config is not None else None
            if client_ip is not None:
                set_default(client_ip, "timeoutSeconds", DEFAULT_CLIENT_IP_TIMEOUT)
        for port in dicts_at(spec, "ports"):
            set_default(port, "protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
        kind = spec["type"]
        if kind in ("NodePort", "LoadBalancer"):
            set_default(spec, "externalTrafficPolicy", "Cluster")
        if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
            set_default(spec, "internalTrafficPolicy", "Cluster")
            set_default(spec, "ipFamilyPolicy", "SingleStack")
        if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return causes + expect_object(spec, "spec")
        kind = spec.get("type")
        causes += v.validate_enum(kind, "spec.type", SERVICE_TYPES)
        cluster_ip = spec.get("clusterIP") or ""
        if kind == "ExternalName":
            name = spec.get("externalName") or ""
            if not name:
                causes.append(v.required("spec.externalName"))
            else:
                causes += [v.invalid("spec.externalName", name, m)
                           for m in v.is_dns1123_subdomain(str(name).rstrip("."))]
            if cluster_ip:
                causes.append(v.forbidden("spec.clusterIP", "may not be set for ExternalName services"))
        elif cluster_ip and cluster_ip != "None" and v.is_valid_ip(str(cluster_ip)):
            causes.append(v.invalid("spec.clusterIP", cluster_ip, "must be empty, 'None', or a valid IP address"))
        elif cluster_ip == "None" and kind in ("NodePort", "LoadBalancer"):
            causes.append(v.invalid("spec.clusterIPs[0]", cluster_ip, f"may not be set to 'None' for {kind} services"))
        cluster_ips = spec.get("clusterIPs")
        if cluster_ips and kind != "ExternalName":
            if not isinstance(cluster_ips, list):
                causes.append(v.type_invalid("spec.clusterIPs", cluster_ips, "must be a list"))
            elif cluster_ip and cluster_ips[0] != cluster_ip:
                causes.append(v.invalid("spec.clusterIPs", cluster_ips, "element [0] must match clusterIP"))
        ports = spec.get("ports")
        if not ports and cluster_ip != "None" and kind != "ExternalName":
            causes.append(v.required("spec.ports"))
        causes += self._validate_ports(list_at(spec, "ports"), kind)
        causes += v.validate_enum(spec.get("sessionAffinity"), "spec.sessionAffinity", ("ClientIP", "None"))
        causes += v.validate_labels(spec.get("selector"), "spec.selector")
        for field, values in (("externalTrafficPolicy", ("Cluster", "Local")),
                              ("internalTrafficPolicy", ("Cluster", "Local")),
                              ("ipFamilyPolicy", ("PreferDualStack", "RequireDualStack", "SingleStack"))):
            causes += v.validate_enum(spec.get(field), f"spec.{field}", values, required_=False)
        if spec.get("externalTrafficPolicy") and kind not in ("NodePort", "LoadBalancer"):
            causes.append(v.invalid("spec.externalTrafficPolicy", spec["externalTrafficPolicy"],
                                    "may only be set for externally-accessible services"))
        return causes

    @staticmethod
    def _validate_ports(ports: list[Any], kind: Any) -> Causes:
        causes: Causes = []
        names: set[str] = set()
        seen: set[tuple[Any, Any]] = set()
        node_ports: set[tuple[Any, Any]] = set()
        for i, port in enumerate(ports):
            at = v.index("spec.ports", i)
            if not isinstance(port, dict):
                causes.append(v.type_invalid(at, port, "must be an object"))
                continue
            name = port.get("name") or ""
            if len(ports) > 1 and not name:
                causes.append(v.required(v.child(at, "name")))
            elif name:
                causes += [v.invalid(v.child(at, "name"), name, m) for m in v.is_dns1123_label(str(name))]
                if name in names:
                    causes.append(v.duplicate(v.child(at, "name"), name))
                names.add(str(name))
            causes += [v.invalid(v.child(at, "port"), port.get("port"), m)
                       for m in v.is_valid_port_num(port.get("port"))]
            causes += v.validate_enum(port.get("protocol"), v.child(at, "protocol"), PROTOCOLS)
            causes += validate_port_num_or_name(port.get("targetPort"), v.child(at, "targetPort"))
            key = (port.get("port"), port.get("protocol"))
            if key in seen:
                causes.append(v.duplicate(at, {"port": key[0], "protocol": key[1]}))
            seen.add(key)
            node_port = port.get("nodePort")
            if node_port:
                if kind == "ClusterIP":
                    causes.append(v.forbidden(v.child(at, "nodePort"), "may not be used when `type` is 'ClusterIP'"))
                elif not (v.is_int(node_port) and NODE_PORT_RANGE[0] <= node_port <= NODE_PORT_RANGE[1]):
                    causes.append(v.invalid(v.child(at, "nodePort"), node_port,
                                            "provided port is not in the valid range. The range of valid ports is "
                                            f"{NODE_PORT_RANGE[0]}-{NODE_PORT_RANGE[1]}"))
                elif (node_port, port.get("protocol")) in node_ports:
                    causes.append(v.duplicate(v.child(at, "nodePort"), node_port))
                node_ports.add((node_port, port.get("protocol")))
        return causes

    def validate_update(self, obj: Obj, old: Obj) -> Causes:
        causes = super().validate_update(obj, old)
        spec, old_spec = dict_at(obj, "spec"), dict_at(old, "spec")
        if spec.get("type") != "ExternalName" and old_spec.get("type") != "ExternalName" and \
                old_spec.get("clusterIP"):
            causes += v.validate_immutable(spec.get("clusterIP") or "", old_spec.get("clusterIP"), "spec.clusterIP")
        return causes


class EndpointsStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        for subset in dicts_at(obj, "subsets"):
            for port in dicts_at(subset, "ports"):
                set_default(port, "protocol", "TCP")

    def validate(self, obj: Obj) -> Causes:
        causes = super().validate(obj)
        subsets = obj.get("subsets")
        if subsets is not None and not isinstance(subsets, list):
            return causes + [v.type_invalid("subsets", subsets, "must be a list")]
        for i, subset in enumerate(subsets or []):
            at = v.index("subsets", i)
            if not isinstance(subset, dict):
                causes.append(v.type_invalid(at, subset, "must be an object"))
                continue
            if not subset.get("addresses") and not subset.get("notReadyAddresses"):
                causes.append(v.required(at, "must specify `addresses` or `notReadyAddresses`"))
            for list_name in ("addresses", "notReadyAddresses"):
                for j, address in enumerate(dicts_at(subset, list_name)):
                    address_at = v.index(v.child(at, list_name), j)
                    ip = str(address.get("ip") or "")
                    causes += [v.invalid(v.child(address_at, "ip"), ip, m) for m in v.is_valid_ip(ip)]
                    if address.get("nodeName"):
                        causes += [v.invalid(v.child(address_at, "nodeName"), address["nodeName"], m)
                                   for m in v.is_dns1123_subdomain(str(address["nodeName"]))]
            ports = dicts_at(subset, "ports")
            for j, port in enumerate(ports):
                port_at = v.index(v.child(at, "ports"), j)
                name = port.get("name") or ""
                if len(ports) > 1 and not name:
                    causes.append(v.required(v.child(port_at, "name")))
                elif name:
                    causes += [v.invalid(v.child(port_at, "name"), name, m) for m in v.is_dns1123_label(str(name))]
                causes += [v.invalid(v.child(port_at, "port"), port.get("port"), m)
                           for m in v.is_valid_port_num(port.get("port"))]
                causes += v.validate_enum(port.get("protocol"), v.child(port_at, "protocol"), PROTOCOLS)
        return causes
