"""`minik delete`: by name, by manifest, by selector; cascade policies; waiting until the object is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_helpers import Invoke

from minik.api.errors import StatusError
from minik.client import Client

DEPLOYMENT = {"metadata": {"name": "web"}, "spec": {
    "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


async def gone(client: Client, resource: str, name: str, namespace: str | None = "default") -> bool:
    try:
        await client.get(resource, name, namespace)
    except StatusError as exc:
        return exc.code == 404
    return False


async def test_delete_by_name_prints_kubectls_line_and_the_object_is_gone(minik: Invoke, client: Client) -> None:
    await client.create("configmaps", {"metadata": {"name": "a"}}, "default")
    await client.create("configmaps", {"metadata": {"name": "b"}}, "default")
    await client.create("deployments", DEPLOYMENT, "default")
    result = await minik("delete", "cm", "a", "b")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ['configmap "a" deleted', 'configmap "b" deleted']
    assert await gone(client, "configmaps", "a") and await gone(client, "configmaps", "b")
    deployment = await minik("delete", "deploy/web")
    assert deployment.stdout.strip() == 'deployment.apps "web" deleted'
    assert await gone(client, "deployments", "web")


async def test_delete_by_manifest_and_by_selector(minik: Invoke, client: Client, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-file}\n---\n"
                        "apiVersion: v1\nkind: Secret\nmetadata: {name: scratch}\n")
    assert (await minik("apply", "-f", str(manifest))).exit_code == 0
    result = await minik("delete", "-f", str(manifest))
    assert result.stdout.splitlines() == ['configmap "from-file" deleted', 'secret "scratch" deleted']
    assert await gone(client, "configmaps", "from-file")

    again = await minik("delete", "-f", str(manifest))
    assert again.exit_code == 1
    assert again.stderr.splitlines()[0] == (f'Error from server (NotFound): error when deleting "{manifest}": '
                                            'configmaps "from-file" not found')
    quiet = await minik("delete", "-f", str(manifest), "--ignore-not-found")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""

    for name, app in (("p", "web"), ("q", "web"), ("r", "db")):
        await client.create("configmaps", {"metadata": {"name": name, "labels": {"app": app}}}, "default")
    selected = await minik("delete", "configmaps", "-l", "app=web")
    assert selected.stdout.splitlines() == ['configmap "p" deleted', 'configmap "q" deleted']
    assert not await gone(client, "configmaps", "r")


async def test_foreground_cascade_waits_until_the_object_is_really_gone(minik: Invoke, client: Client) -> None:
    """Foreground deletion keeps the object (finalizer foregroundDeletion) until the garbage collector is done;
    delete waits for its DELETED event, here caused by the test playing the garbage collector."""
    await client.create("deployments", DEPLOYMENT, "default")
    deleting = asyncio.create_task(minik("delete", "deployment", "web", "--cascade=foreground"))
    while True:
        live = await client.get("deployments", "web", "default")
        if live["metadata"].get("deletionTimestamp"):
            break
        await asyncio.sleep(0.02)
    assert live["metadata"]["finalizers"] == ["foregroundDeletion"]
    await asyncio.sleep(0.2)
    assert not deleting.done()
    await client.patch("deployments", "web", {"metadata": {"finalizers": None}}, "default")
    result = await asyncio.wait_for(deleting, 20)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == 'deployment.apps "web" deleted'
    assert await gone(client, "deployments", "web")


@pytest.mark.parametrize(("cascade", "finalizer"), [("orphan", "orphan"), ("foreground", "foregroundDeletion")])
async def test_cascade_policies_reach_the_server(minik: Invoke, client: Client, cascade: str, finalizer: str) -> None:
    await client.create("deployments", DEPLOYMENT, "default")
    result = await minik("delete", "deploy", "web", f"--cascade={cascade}", "--wait=false")
    assert result.exit_code == 0 and result.stdout.strip() == 'deployment.apps "web" deleted'
    live = await client.get("deployments", "web", "default")
    assert live["metadata"]["finalizers"] == [finalizer] and live["metadata"]["deletionTimestamp"]


async def test_waiting_gives_up_after_the_timeout(minik: Invoke, client: Client) -> None:
    await client.create("configmaps", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
                        "default")
    result = await minik("delete", "cm", "held", "--timeout=300ms")
    assert result.exit_code == 1
    assert result.stdout.strip() == 'configmap "held" deleted'
    assert result.stderr.strip() == "error: timed out waiting for the condition on configmaps/held"
    await client.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "default")


async def test_delete_needs_a_name_or_a_selector(minik: Invoke) -> None:
    result = await minik("delete", "pods")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: resource(s) were provided, but no name was specified"
    missing = await minik("delete", "pod", "nope")
    assert missing.exit_code == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
