"""The proxy on every node (Services' cluster IPs and node ports, forwarded in round robin to ready endpoints) and
the node's cluster DNS server. ``NodeProxy`` is the component a node agent runs."""

from minik.proxy.component import NodeProxy, ProxySettings

__all__ = ["NodeProxy", "ProxySettings"]
