"""The proxy against a real API server, real sockets and this machine's iptables: node ports and cluster IPs
forwarded in round robin to ready endpoints, refused at once without any, following Endpoints changes, and
leaving nothing behind (listeners, connections, tasks, NAT rules)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections import Counter

from minik.client import Client
from minik.cluster import Cluster
from minik.proxy.iptables import NatChain
from minik.proxy.servicemap import PortKey
from tests.proxy.conftest import proxy_of
from tests.proxy.helpers import Backends, endpoints, eventually, fetch, refused, service

NS = "default"


def nat_rules() -> str:
    return subprocess.run(["iptables", "-w", "5", "-t", "nat", "-S"], capture_output=True, text=True,
                          check=True).stdout


async def node_port_service(api: Client, name: str, backends: Backends, ips: list[str], **spec: object) -> dict:
    created = await api.create("services", service(name, type="NodePort", ports=[{"port": 80,
                                                                                  "targetPort": backends.port}],
                                                   **spec), NS)
    await api.create("endpoints", endpoints(name, ips, [{"port": backends.port}]), NS)
    return created


async def serving(host: str, port: int) -> bool:
    return not await refused(host, port)


async def redirected(cluster: Cluster, cluster_ip: str) -> None:
    """Wait until the proxy's NAT chain redirects ``cluster_ip`` (before that, a connection to it leaves the
    machine, and on some networks is even accepted by whatever routes it)."""
    chain = proxy_of(cluster).chain
    assert chain is not None

    async def applied() -> bool:
        return any(r.ip == cluster_ip for r in chain.applied or ())
    await eventually(applied, timeout=5.0, what=f"a redirect for {cluster_ip}")


async def test_node_port_connections_go_to_every_ready_endpoint_in_turn(proxied: Cluster, api: Client,
                                                                        backends: Backends) -> None:
    ips = await backends.start(3)
    svc = await node_port_service(api, "web", backends, ips)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    await eventually(lambda: serving("127.0.0.1", node_port), what="node port listening")
    answers = [await fetch("127.0.0.1", node_port) for _ in range(30)]
    assert Counter(answers) == {ip: 10 for ip in ips}
    assert answers[:3] == answers[3:6] == answers[27:30] and len(set(answers[:3])) == 3  # in turn


async def test_the_cluster_ip_reaches_the_endpoints_from_this_node_through_the_nat_chain(
        proxied: Cluster, api: Client, backends: Backends) -> None:
    ips = await backends.start(2)
    svc = await node_port_service(api, "web", backends, ips)
    cluster_ip = svc["spec"]["clusterIP"]
    proxy = proxy_of(proxied)
    assert proxy.chain is not None and proxy.iptables_problem is None
    await redirected(proxied, cluster_ip)
    assert sorted({await fetch(cluster_ip, 80) for _ in range(4)}) == sorted(ips)
    portal = proxy.proxier.forwarders[PortKey(NS, "web", "", "TCP")].portal_port  # type: ignore[union-attr]
    rules = nat_rules()
    assert f"-A {proxy.chain.name} -d {cluster_ip}/32 -p tcp -m tcp --dport 80 -m comment --comment " \
           f'"default/web/TCP" -j REDIRECT --to-ports {portal}' in rules
    for hook in ("PREROUTING", "OUTPUT"):
        assert f'-A {hook} -m comment --comment "minik proxy pid={os.getpid()} node={proxy.settings.node_name}" ' \
               f"-j {proxy.chain.name}" in rules


async def test_a_service_without_ready_endpoints_refuses_connections_at_once(proxied: Cluster, api: Client,
                                                                            backends: Backends) -> None:
    ips = await backends.start(1)
    created = await api.create("services", service("web", type="NodePort", ports=[{"port": 80,
                                                                                    "targetPort": backends.port}]), NS)
    cluster_ip, node_port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
    await api.create("endpoints", endpoints("web", [], [{"port": backends.port}], not_ready=ips), NS)
    await redirected(proxied, cluster_ip)  # the cluster IP is redirected (to a port nothing listens on) at once
    assert await refused("127.0.0.1", node_port) and await refused(cluster_ip, 80)
    ready = await api.get("endpoints", "web", NS)
    ready["subsets"][0]["addresses"] = ready["subsets"][0].pop("notReadyAddresses")
    await api.update("endpoints", ready, NS)
    await eventually(lambda: serving("127.0.0.1", node_port), timeout=1.0, what="listening within a second")
    assert await fetch(cluster_ip, 80) == ips[0]
    await api.delete("endpoints", "web", NS)
    await eventually(lambda: refused("127.0.0.1", node_port), timeout=1.0, what="refused within a second")
    assert await refused(cluster_ip, 80)


async def test_an_endpoint_that_goes_away_gets_no_new_connections(proxied: Cluster, api: Client,
                                                                 backends: Backends) -> None:
    ips = await backends.start(3)
    svc = await node_port_service(api, "web", backends, ips)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    await eventually(lambda: serving("127.0.0.1", node_port))
    one = [{"addresses": [{"ip": ips[0]}], "ports": [{"port": backends.port}]}]
    await api.patch("endpoints", "web", {"subsets": one}, NS)

    async def only_the_first() -> bool:
        return {await fetch("127.0.0.1", node_port) for _ in range(6)} == {ips[0]}
    await eventually(only_the_first, timeout=1.0, what="only the remaining endpoint within a second")


async def test_client_ip_affinity_keeps_a_client_on_its_endpoint(proxied: Cluster, api: Client,
                                                                backends: Backends) -> None:
    ips = await backends.start(3)
    svc = await node_port_service(api, "web", backends, ips, sessionAffinity="ClientIP")
    node_port = svc["spec"]["ports"][0]["nodePort"]
    await eventually(lambda: serving("127.0.0.1", node_port))
    answers = {await fetch("127.0.0.1", node_port) for _ in range(9)}
    assert len(answers) == 1 and answers <= set(ips)


async def test_a_dead_endpoint_is_skipped_for_the_next_one(proxied: Cluster, api: Client, backends: Backends) -> None:
    ips = await backends.start(2)
    svc = await node_port_service(api, "web", backends, [*ips, "127.0.0.99"])  # nothing listens on .99
    node_port = svc["spec"]["ports"][0]["nodePort"]
    await eventually(lambda: serving("127.0.0.1", node_port))
    assert Counter([await fetch("127.0.0.1", node_port) for _ in range(6)]).keys() == set(ips)


async def test_a_large_transfer_and_a_half_close_pass_through_unchanged(proxied: Cluster, api: Client,
                                                                        backends: Backends) -> None:
    ips = await backends.start(1, echo=True)
    svc = await node_port_service(api, "echo", backends, ips)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    await eventually(lambda: serving("127.0.0.1", node_port))
    payload = os.urandom(4 * 1024 * 1024)
    reader, writer = await asyncio.open_connection("127.0.0.1", node_port)

    async def send() -> None:
        for i in range(0, len(payload), 65536):
            writer.write(payload[i:i + 65536])
            await writer.drain()
        writer.write_eof()  # the echo server sees EOF, sends the rest and closes

    sent, received = await asyncio.gather(send(), asyncio.wait_for(reader.read(), 30))
    writer.close()
    assert received == payload


async def test_deleting_a_service_closes_its_listeners_and_connections(proxied: Cluster, api: Client,
                                                                       backends: Backends) -> None:
    ips = await backends.start(1, echo=True)
    svc = await node_port_service(api, "echo", backends, ips)
    node_port, cluster_ip = svc["spec"]["ports"][0]["nodePort"], svc["spec"]["clusterIP"]
    await eventually(lambda: serving("127.0.0.1", node_port))
    reader, writer = await asyncio.open_connection("127.0.0.1", node_port)
    writer.write(b"ping")
    assert await reader.readexactly(4) == b"ping"
    proxy = proxy_of(proxied)
    await api.delete("services", "echo", NS)
    assert await asyncio.wait_for(reader.read(), 2.0) == b""  # the proxy closed the connection
    writer.close()
    assert await refused("127.0.0.1", node_port)
    assert PortKey(NS, "echo", "", "TCP") not in proxy.proxier.forwarders  # type: ignore[union-attr]
    await eventually(lambda: asyncio.to_thread(lambda: cluster_ip not in nat_rules()), what="its NAT rule removed")


async def test_udp_service_ports_are_forwarded_per_client_in_turn(proxied: Cluster, api: Client,
                                                                  backends: Backends) -> None:
    ips = await backends.start_udp(2)
    created = await api.create("services", service("echo", type="NodePort", ports=[
        {"port": 53, "targetPort": backends.port, "protocol": "UDP"}]), NS)
    await api.create("endpoints", endpoints("echo", ips, [{"port": backends.port, "protocol": "UDP"}]), NS)
    node_port, cluster_ip = created["spec"]["ports"][0]["nodePort"], created["spec"]["clusterIP"]
    await redirected(proxied, cluster_ip)
    loop = asyncio.get_running_loop()

    async def ask(host: str, port: int) -> str:
        answer: asyncio.Future[bytes] = loop.create_future()

        class Client(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, addr: object) -> None:
                if not answer.done():
                    answer.set_result(data)

        transport, _ = await loop.create_datagram_endpoint(Client, remote_addr=(host, port))
        try:
            for _ in range(20):  # UDP: ask again until the proxy listens
                transport.sendto(b"?")
                try:
                    return (await asyncio.wait_for(asyncio.shield(answer), 0.2)).decode()
                except TimeoutError:
                    continue
            raise AssertionError(f"no answer from {host}:{port}")
        finally:
            transport.close()

    assert Counter([await ask("127.0.0.1", node_port) for _ in range(4)]) == {ips[0]: 2, ips[1]: 2}
    assert await ask(cluster_ip, 53) in ips


async def test_a_busy_node_port_is_taken_once_it_is_free_and_other_services_work_meanwhile(
        proxied: Cluster, api: Client, backends: Backends) -> None:
    ips = await backends.start(1)
    squatter = await asyncio.start_server(lambda r, w: w.close(), "0.0.0.0", 0)
    busy = int(squatter.sockets[0].getsockname()[1])
    try:
        if not 30000 <= busy <= 32767:  # an ephemeral port outside the node port range: squat on one in it
            squatter.close()
            busy = 30000 + (busy % 2700)
            squatter = await asyncio.start_server(lambda r, w: w.close(), "0.0.0.0", busy)
        await api.create("services", service("busy", type="NodePort", ports=[{"port": 80, "nodePort": busy,
                                                                               "targetPort": backends.port}]), NS)
        await api.create("endpoints", endpoints("busy", ips, [{"port": backends.port}]), NS)
        other = await node_port_service(api, "other", backends, ips)
        await eventually(lambda: serving("127.0.0.1", other["spec"]["ports"][0]["nodePort"]))
        forwarder = proxy_of(proxied).proxier.forwarders[PortKey(NS, "busy", "", "TCP")]  # type: ignore[union-attr]
        assert forwarder.node_port_error == "in use by another process"
    finally:
        squatter.close()
        await squatter.wait_closed()

    async def proxied_answer() -> bool:
        try:
            return await fetch("127.0.0.1", busy) == ips[0]
        except OSError:
            return False
    await eventually(proxied_answer, timeout=5.0, what="the proxy on the freed node port")  # resync: 1 s


async def test_stopping_the_proxy_removes_its_nat_chain(proxied: Cluster) -> None:
    proxy = proxy_of(proxied)
    assert proxy.chain is not None
    name = proxy.chain.name
    assert f"-N {name}" in nat_rules()
    await proxy.stop()
    assert name not in nat_rules()


async def dead_proxy_chain() -> NatChain:
    """The NAT chain a proxy left behind when its process died (named after a PID that no longer runs)."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    pid = int(dead.stdout)
    stale = NatChain("gone-node")
    stale.name = f"MINIK-DEAD{pid:08X}"
    stale.comment = f"minik proxy pid={pid} node=gone-node"
    await stale.install()
    return stale


async def test_the_chain_of_a_proxy_whose_process_is_gone_is_removed_by_the_next_proxy() -> None:
    stale = await dead_proxy_chain()
    assert f"-N {stale.name}" in nat_rules()
    fresh = NatChain("fresh-node")
    try:
        assert stale.name in await fresh.remove_stale()
        assert stale.name not in nat_rules()
    finally:
        await fresh.uninstall()


async def test_two_proxies_removing_the_same_stale_chain_at_once_both_succeed() -> None:
    stale = await dead_proxy_chain()
    first, second = NatChain("first-node"), NatChain("second-node")
    try:
        removed = await asyncio.gather(first.remove_stale(), second.remove_stale())
        assert any(stale.name in r for r in removed)
        assert stale.name not in nat_rules()
    finally:
        await first.uninstall()
        await second.uninstall()
