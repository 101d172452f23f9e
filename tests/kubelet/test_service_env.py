"""The kubelet gives every container the variables of the Services its pod can see when the container starts."""

from __future__ import annotations

from pathlib import Path

from minik.client import Client
from minik.cluster import Cluster
from minik.kubelet.containers import ContainerConfigs


def service(name: str, ip: str, port: int = 80) -> dict:
    return {"metadata": {"name": name}, "spec": {"clusterIP": ip, "ports": [{"name": "http", "port": port}]}}


async def test_containers_get_their_namespaces_services_and_their_own_env_wins(cluster: Cluster,
                                                                              tmp_path: Path) -> None:
    assert cluster.api is not None
    async with Client.in_process(cluster.api) as client:
        await client.create("namespaces", {"metadata": {"name": "shop"}})
        await client.create("services", service("web-front", "10.96.7.7"), "shop")
        await client.create("services", service("db", "10.96.8.8", 5432), "shop")
        await client.create("services", service("elsewhere", "10.96.9.9"), "default")
        master = (await client.get("services", "kubernetes", "default"))["spec"]["clusterIP"]
        configs = ContainerConfigs(client, tmp_path, "192.0.2.2", {})
        pod = {"metadata": {"name": "p", "namespace": "shop", "uid": "u"}, "spec": {"containers": []}}
        container = {"name": "c", "env": [{"name": "DB_SERVICE_PORT", "value": "6543"},
                                          {"name": "URL", "value": "http://$(WEB_FRONT_SERVICE_HOST)/"}]}
        env = await configs.env(pod, container, "172.17.0.9")
        assert env["WEB_FRONT_SERVICE_HOST"] == "10.96.7.7" and env["WEB_FRONT_SERVICE_PORT_HTTP"] == "80"
        assert env["WEB_FRONT_PORT_80_TCP"] == "tcp://10.96.7.7:80"
        assert env["DB_SERVICE_PORT"] == "6543"  # the container's own value
        assert env["URL"] == "http://10.96.7.7/"  # service variables can be referenced
        assert env["KUBERNETES_SERVICE_HOST"] == master
        assert "ELSEWHERE_SERVICE_HOST" not in env
        pod["spec"]["enableServiceLinks"] = False
        env = await configs.env(pod, {"name": "c"}, "172.17.0.9")
        assert {k for k in env if k.endswith("_SERVICE_HOST")} == {"KUBERNETES_SERVICE_HOST"}
