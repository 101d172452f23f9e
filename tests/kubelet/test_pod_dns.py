"""A pod's resolver configuration from its dnsPolicy and dnsConfig, as Kubernetes' kubelet builds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from minik.cluster import Cluster
from minik.kubelet.dns import ClusterDns, PodDns, pod_dns, pod_hostname, read_resolv_conf

HOST = PodDns(["192.0.2.53"], ["corp.example"], ["timeout:2"])


def pod(namespace: str = "shop", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": namespace}, "spec": {"containers": [{"name": "c"}], **spec}}


def test_cluster_first_uses_the_cluster_dns_and_the_kubernetes_search_list() -> None:
    assert pod_dns(pod(), "10.96.0.10", HOST) == PodDns(
        ["10.96.0.10"], ["shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"],
        ["ndots:5"])
    assert pod_dns(pod(dnsPolicy="ClusterFirstWithHostNet", hostNetwork=True), "10.96.0.10", HOST) == \
        pod_dns(pod(), "10.96.0.10", HOST)


@pytest.mark.parametrize("spec, cluster_dns", [({"dnsPolicy": "Default"}, "10.96.0.10"),
                                               ({"hostNetwork": True}, "10.96.0.10"),
                                               ({}, None)])
def test_default_host_network_and_a_cluster_without_dns_leave_the_nodes_resolver(spec: dict, cluster_dns: Any) -> None:
    assert pod_dns(pod(**spec), cluster_dns, HOST) is None


def test_dns_config_is_merged_and_none_takes_only_it() -> None:
    config = {"nameservers": ["192.0.2.99", "10.96.0.10"], "searches": ["extra.example"],
              "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}
    assert pod_dns(pod(dnsConfig=config), "10.96.0.10", HOST) == PodDns(
        ["10.96.0.10", "192.0.2.99"],
        ["shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "extra.example"],
        ["ndots:2", "edns0"])
    assert pod_dns(pod(dnsPolicy="None", dnsConfig=config), "10.96.0.10", HOST) == PodDns(
        ["192.0.2.99", "10.96.0.10"], ["extra.example"], ["ndots:2", "edns0"])
    assert pod_dns(pod(dnsPolicy="Default", dnsConfig={"searches": ["x.example"]}), None, HOST) == PodDns(
        ["192.0.2.53"], ["corp.example", "x.example"], ["timeout:2"])


def test_the_nodes_resolv_conf_is_read(tmp_path: Path) -> None:
    conf = tmp_path / "resolv.conf"
    conf.write_text("# comment\nnameserver 192.0.2.1\nsearch a.example b.example\nnameserver 192.0.2.2\n"
                    "options ndots:1 rotate\n")
    assert read_resolv_conf(str(conf)) == PodDns(["192.0.2.1", "192.0.2.2"], ["a.example", "b.example"],
                                                 ["ndots:1", "rotate"])
    assert read_resolv_conf(str(tmp_path / "missing")) == PodDns()


async def test_the_cluster_dns_is_the_kube_dns_service_once_it_exists(cluster: Cluster) -> None:
    assert cluster.api is not None
    async with cluster.in_process_client() as client:
        dns = ClusterDns(client)
        assert await dns.for_pod(pod()) is None  # no DNS service (yet): the node's resolver
        await client.create("services", {"metadata": {"name": "kube-dns"}, "spec": {
            "clusterIP": "10.96.0.10", "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}}, "kube-system")
        config = await dns.for_pod(pod())
        assert config is not None and config.servers == ["10.96.0.10"]


def test_a_pod_with_hostname_and_subdomain_knows_itself_by_its_name_under_the_service() -> None:
    pod = {"metadata": {"name": "web-0", "namespace": "shop"}, "spec": {"hostname": "web-0", "subdomain": "web"}}
    assert pod_hostname(pod) == ("web-0", "web.shop.svc.cluster.local")
    assert pod_hostname({"metadata": {"name": "x" * 70, "namespace": "a"}, "spec": {}}) == ("x" * 63, "")
    assert pod_hostname({"metadata": {"name": "api-7d9", "namespace": "a"}, "spec": {"hostname": "api"}}) == ("api", "")
