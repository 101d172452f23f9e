"""The README's "Extending minik" walkthrough, as a user runs it with kubectl: the CRD, the policy and the webhook
under manifests/extend/ do what the README says they do."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest
from kubectl_helpers import Kubectl

pytestmark = pytest.mark.timeout(120)

EXTEND = Path(__file__).resolve().parents[2] / "manifests" / "extend"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_the_example_crd_serves_websites_with_defaults_columns_scale_and_its_cel_rule(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", str(EXTEND / "crd.yaml"))
    await kubectl("wait", "--for", "condition=established", "--timeout=10s", "crd/websites.example.minik.dev")
    await kubectl("apply", "-f", str(EXTEND / "website.yaml"))
    listed = await kubectl("get", "websites")
    assert listed.rows[0] == ["NAME", "HOST", "REPLICAS", "AGE"]
    assert listed.rows[1][:3] == ["docs", "docs.example.com", "1"]  # replicas defaulted by the schema
    await kubectl("scale", "website", "docs", "--replicas=3")
    assert (await kubectl("get", "web", "docs", "-o", "jsonpath={.spec.replicas}")).out == "3"
    bad = kubectl.manifest("bad.yaml", {"apiVersion": "example.minik.dev/v1", "kind": "Website",
                                        "metadata": {"name": "shop"},
                                        "spec": {"host": "shop.example.org", "tls": True}})
    refused = await kubectl("apply", "-f", bad, ok=False)
    assert refused.code != 0
    assert "TLS is only offered for hosts under example.com" in refused.err


async def test_the_example_policy_refuses_a_deployment_without_a_team_in_a_strict_namespace(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", str(EXTEND / "policy.yaml"))
    await kubectl("create", "namespace", "strict")
    await kubectl("label", "namespace", "strict", "policy=strict")
    refused = await kubectl("create", "deployment", "web", "--image=busybox:1.36", "-n", "strict", ok=False)
    assert refused.code != 0 and "a Deployment here needs a team label" in refused.err
    await kubectl("create", "deployment", "web", "--image=busybox:1.36", "-n", "default")


async def test_the_example_webhook_refuses_a_configmap_holding_a_password(kubectl: Kubectl) -> None:
    config = kubectl.home / "webhook.yaml"
    server = await asyncio.create_subprocess_exec(
        sys.executable, str(EXTEND / "webhook.py"), "--port", str(free_port()), "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        assert server.stdout is not None
        ready = await asyncio.wait_for(server.stdout.readline(), 30)
        assert b"webhook on https://127.0.0.1:" in ready
        await kubectl("apply", "-f", str(config))
        await kubectl("create", "namespace", "demo")
        await kubectl("label", "namespace", "demo", "webhook-demo=on")
        refused = await kubectl("create", "configmap", "creds", "-n", "demo", "--from-literal=password=x", ok=False)
        assert refused.code != 0
        assert ('admission webhook "no-passwords.example.minik.dev" denied the request: '
                'a ConfigMap may not hold a "password": use a Secret') in refused.err
        await kubectl("create", "configmap", "settings", "-n", "demo", "--from-literal=color=blue")
    finally:
        server.terminate()
        await server.wait()
