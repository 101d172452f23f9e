"""`minik token` and a node join end to end against a real `minik up`: the printed join command works, a wrong CA
hash refuses before the token is sent, revoked and expired tokens are refused, a view token reads through kubectl
but cannot write, and `minik token list` shows what exists without its secrets."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from cli_helpers import minik_command, subprocess_env

from minik.kubeconfig import endpoint as kubeconfig_endpoint
from minik.kubelet.join import JoinError, join_cluster

JOIN = re.compile(r"minik node join --server (\S+) --token (\S+) --ca-hash (sha256:[0-9a-f]{64})")


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(minik_command(*args), env=subprocess_env(home), capture_output=True, text=True,
                          timeout=60)


async def minik(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(run, home, *args)


@pytest.mark.timeout(120)
async def test_tokens_and_a_pinned_join_against_a_real_minik_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    up = await minik(home, "up", "-d", "--port", "0", "--no-node", "--disable", "scheduler,controllers")
    assert up.returncode == 0, up.stderr
    try:
        created = await minik(home, "token", "create", "--description", "for worker-1")
        assert created.returncode == 0, created.stderr
        token = created.stdout.strip()
        assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", token)
        server, printed, pin = JOIN.search(created.stderr).groups()  # type: ignore[union-attr]
        assert printed == token and server.startswith("https://127.0.0.1:")

        wrong = "sha256:" + "1" * 64
        with pytest.raises(JoinError, match="does not match the pinned hash"):
            await join_cluster(server, token, wrong, "worker-1", tmp_path / "w1")
        joined = await join_cluster(server, token, pin, "worker-1", tmp_path / "w1")
        async with joined.client() as node:
            await node.create("nodes", {"metadata": {"name": "worker-1"}})

        listed = await minik(home, "token", "list")
        rows = [line.split() for line in listed.stdout.splitlines()]
        assert rows[0] == ["ID", "ROLE", "TTL", "EXPIRES", "DESCRIPTION"]
        assert [token.split(".")[0], "node", "23h"] in [r[:3] for r in rows]
        assert ["node-credential", "<forever>", "<never>", "node", "worker-1"] in [r[1:] for r in rows]
        assert token.split(".")[1] not in listed.stdout and joined.token not in listed.stdout

        deleted = await minik(home, "token", "delete", token)
        assert deleted.stdout.strip() == f'bootstrap token "{token.split(".")[0]}" deleted'
        with pytest.raises(JoinError, match="unknown, expired or revoked"):
            await join_cluster(server, token, pin, "worker-2", tmp_path / "w2")

        short = (await minik(home, "token", "create", "--ttl", "1s")).stdout.strip()
        deadline, attempt = time.monotonic() + 30, 0
        while True:  # valid for a second at most; then refused
            attempt += 1
            try:
                await join_cluster(server, short, pin, f"worker-3-{attempt}", tmp_path / f"w3-{attempt}")
            except JoinError as exc:
                assert "unknown, expired or revoked" in str(exc)
                break
            assert time.monotonic() < deadline, "the expired token was still accepted"
            await asyncio.sleep(0.5)

        view = (await minik(home, "token", "create", "--role", "view")).stdout.strip()
        if shutil.which("kubectl"):
            admin_config = home / ".minik" / "minik" / "kubeconfig"
            config = yaml.safe_load(admin_config.read_text())
            config["users"][0]["user"] = {"token": view}
            viewer_config = tmp_path / "viewer.conf"
            viewer_config.write_text(yaml.safe_dump(config))
            kubectl = ["kubectl", "--kubeconfig", str(viewer_config), "--cache-dir", str(tmp_path / "cache")]
            got = await asyncio.to_thread(subprocess.run, [*kubectl, "get", "ns", "-o", "name"], capture_output=True,
                                          text=True, timeout=60)
            assert got.returncode == 0, got.stderr
            assert "namespace/default" in got.stdout.split()
            made = await asyncio.to_thread(subprocess.run, [*kubectl, "create", "configmap", "x"],
                                           capture_output=True, text=True, timeout=60)
            assert made.returncode == 1
            assert made.stderr.strip() == (
                f'error: failed to create configmap: configmaps is forbidden: User "system:bootstrap:'
                f'{view.split(".")[0]}" cannot create resource "configmaps" in API group "" in the namespace '
                '"default"')
        assert kubeconfig_endpoint(home / ".minik" / "minik" / "kubeconfig").token  # the admin's, 0600
    finally:
        down = await minik(home, "down")
    assert down.returncode == 0, down.stderr


def test_token_commands_print_clear_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run(home, "token", "delete", "NOT-AN-ID")
    assert result.returncode == 1
    assert result.stderr.strip() == 'error: "NOT-AN-ID" is not a token id ([a-z0-9]{6}) nor a token'
    result = run(home, "token", "create", "--ttl", "soon")
    assert result.returncode == 2
    assert "invalid duration 'soon'" in result.stderr
