"""NodePorts: a pod's hostPorts must be free on the node (same protocol and port, and the same host IP or either
one 0.0.0.0)."""

from __future__ import annotations

from minik.scheduler.framework import SKIP, SUCCESS, CycleState, NodeInfo, PodInfo, Status, unschedulable

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_ANY = "0.0.0.0"


def conflicts(wanted: tuple[str, str, int], used: tuple[str, str, int]) -> bool:
    ip, protocol, port = wanted
    used_ip, used_protocol, used_port = used
    return port == used_port and protocol == used_protocol and (ip == used_ip or _ANY in (ip, used_ip))


class NodePorts:
    name = "NodePorts"

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return SUCCESS if pod.host_ports else SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        used = node.used_ports
        if not used:
            return SUCCESS
        for wanted in pod.host_ports:
            if any(conflicts(wanted, u) for u in used):
                return unschedulable(ERR_REASON)
        return SUCCESS
