"""`minik up` (foreground and --detach), `status`, `down` and `kubeconfig`, as real processes: the ready line, the
kubeconfig kubectl uses at once, a clean stop on SIGTERM that keeps the data, and clear errors."""

from __future__ import annotations

import base64
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from cli_helpers import api_request as http
from cli_helpers import minik_command, subprocess_env
from cli_helpers import run_minik as run
from click.testing import CliRunner

from minik.cli import cli
from minik.kubeconfig import endpoint as kubeconfig_endpoint

READY = re.compile(r"^minik: ready in [0-9.]+s, API at (https://127\.0\.0\.1:\d+) \(kubeconfig: (\S+)\)$")


def test_up_detached_then_status_kubectl_get_and_down(tmp_path: Path) -> None:
    home = tmp_path / "home"
    user_config = tmp_path / "kube" / "config"
    user_config.parent.mkdir()
    user_config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "work",
        "clusters": [{"name": "work", "cluster": {"server": "https://example.invalid"}}],
        "contexts": [{"name": "work", "context": {"cluster": "work", "user": "work"}}],
        "users": [{"name": "work", "user": {"token": "t"}}]}))
    data = home / ".minik" / "minik"

    up = run(home, "up", "-d", "--port", "0", "--disable", "scheduler", "--no-node", "--update-kubeconfig",
             KUBECONFIG=str(user_config))
    assert up.returncode == 0, up.stderr
    lines = up.stdout.splitlines()
    assert lines[0] == f"minik: starting cluster 'minik' in the background (data in {data})"
    ready = READY.match(lines[1])
    assert ready, lines
    url, kubeconfig = ready.group(1), Path(ready.group(2))
    assert kubeconfig == data / "kubeconfig"
    assert re.match(r"^minik: running in the background as PID \d+ .*stop it with: minik down$", lines[2])
    assert re.fullmatch(rf"minik: add a node with: minik node join --server {re.escape(url)} --token "
                        r"[a-z0-9]{6}\.[a-z0-9]{16} --ca-hash sha256:[0-9a-f]{64}", lines[3]), lines[3]
    try:
        assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
        assert http("GET", url + "/api/v1/namespaces/default", kubeconfig)["metadata"]["name"] == "default"

        status = run(home, "status")
        assert status.returncode == 0
        assert status.stdout.splitlines()[0].startswith("minik: cluster 'minik' is running (PID ")
        assert f"API:        {url}" in status.stdout
        assert "disabled:   scheduler" in status.stdout
        assert "4 namespaces, 0 nodes, 0 pods" in status.stdout

        again = run(home, "up", "-d", "--port", "0")
        assert again.returncode == 1
        assert again.stderr.startswith("error: cluster 'minik' is already running (PID ")

        runner = CliRunner(env={"HOME": str(home)})
        assert runner.invoke(cli, ["kubeconfig"]).stdout.strip() == str(kubeconfig)
        got = runner.invoke(cli, ["get", "ns", "-o", "name"])  # finds the local cluster by itself
        assert got.stdout.splitlines() == ["namespace/default", "namespace/kube-node-lease",
                                           "namespace/kube-public", "namespace/kube-system"]

        merged = yaml.safe_load(user_config.read_text())
        assert merged["current-context"] == "work"  # already set: left alone
        assert [c["name"] for c in merged["contexts"]] == ["work", "minik"]
        assert [c["cluster"]["server"] for c in merged["clusters"] if c["name"] == "minik"] == [url]

        if shutil.which("kubectl"):
            kubectl = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir",
                                      str(tmp_path / "cache"), "get", "ns"], capture_output=True, text=True,
                                     timeout=60, env=subprocess_env(home))
            assert kubectl.returncode == 0, kubectl.stderr
            assert kubectl.stdout.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
            assert [line.split()[0] for line in kubectl.stdout.splitlines()[1:]] == [
                "default", "kube-node-lease", "kube-public", "kube-system"]
    finally:
        down = run(home, "down")
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines()[-1] == f"minik: stopped; state kept in {data}"
    stopped = run(home, "status")
    assert stopped.returncode == 3
    assert stopped.stdout.strip() == f"minik: cluster 'minik' is not running (data in {data})"
    assert "ready in" in (data / "minik.out").read_text()
    assert run(home, "down").stderr.strip() == "minik: cluster 'minik' is not running"


def test_up_with_plain_http_writes_the_admin_token_and_refuses_anyone_without_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".minik" / "minik"
    up = run(home, "up", "-d", "--plain-http", "--port", "0", "--disable", "scheduler,controllers,proxy", "--no-node")
    assert up.returncode == 0, up.stderr
    lines = up.stdout.splitlines()
    ready = re.fullmatch(r"minik: ready in [0-9.]+s, API at (http://127\.0\.0\.1:\d+) \(kubeconfig: (\S+)\)", lines[1])
    assert ready, lines
    assert len(lines) == 3  # no join command: a node pins the CA it finds over TLS
    url = ready.group(1)
    try:
        endpoint = kubeconfig_endpoint(Path(ready.group(2)))
        assert (endpoint.server, endpoint.ca_data) == (url, None) and endpoint.token
        assert (data / "pki" / "ca.crt").exists()  # made all the same, for the kubelets' TLS
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/api/v1/namespaces/default", timeout=10)  # noqa: S310
        assert refused.value.code == 401
        request = urllib.request.Request(url + "/api/v1/namespaces/default",
                                         headers={"Authorization": f"Bearer {endpoint.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            assert json.loads(response.read())["metadata"]["name"] == "default"
        status = run(home, "status")  # counts the objects with the kubeconfig's token
        assert "4 namespaces, 0 nodes, 0 pods" in status.stdout, status.stdout
    finally:
        down = run(home, "down")
    assert down.returncode == 0, down.stderr


def start(home: Path, data: Path) -> tuple[subprocess.Popen[str], str]:
    """`minik up` in the foreground, its output a pipe: (the process, the API's URL)."""
    process = subprocess.Popen(minik_command("up", "--data-dir", str(data), "--port", "0", "--sync", "NORMAL"),
                               env=subprocess_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first == f"minik: starting cluster 'minik' (data in {data})\n"
    assert re.fullmatch(rf"minik: store {re.escape(str(data))}/state\.db open at revision \d+\n",
                        process.stdout.readline())
    listening = re.fullmatch(r"minik: API server listening on (https://127\.0\.0\.1:\d+)\n", process.stdout.readline())
    assert listening, "no listening line"
    started = [process.stdout.readline() for _ in range(4)]
    assert started == [f"minik: {name} started\n" for name in ("scheduler", "controllers", "proxy", "node")]
    ready = READY.match(process.stdout.readline().rstrip("\n"))
    assert ready, "no ready line"
    assert ready.group(1) == listening.group(1)
    # not a terminal: no join command (its token would stay in whatever keeps this output), how to make one
    assert process.stdout.readline() == ("minik: to add a node, make a join command with: minik token create "
                                         "--print-join-command\n")
    return process, ready.group(1)


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, _err = process.communicate(timeout=30)
    assert process.returncode == 0
    return out


def test_up_in_the_foreground_stops_on_sigterm_and_the_next_up_carries_on(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    process, url = start(home, data)
    try:
        http("POST", url + "/api/v1/namespaces/default/configmaps", data / "kubeconfig",
             {"metadata": {"name": "kept"}})
        assert json.loads((data / "running.json").read_text())["url"] == url
    finally:
        out = stop(process)
    assert out.splitlines() == ["minik: shutting down", f"minik: stopped; state kept in {data}"]
    assert not (data / "running.json").exists()
    assert run(home, "status", "--data-dir", str(data)).returncode == 3

    process, url = start(home, data)
    try:
        assert http("GET", url + "/api/v1/namespaces/default/configmaps/kept",
                    data / "kubeconfig")["metadata"]["name"] == "kept"
    finally:
        stop(process)


#: the colours and bold of the terminal display
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Terminal:
    """`minik up` in the foreground as a person runs it: its output a (pseudo-)terminal (its lines read without
    their colours)."""

    def __init__(self, home: Path, data: Path, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(minik_command("up", "--data-dir", str(data), "--port", "0", "--sync",
                                                      "NORMAL", *args),
                                        env=subprocess_env(home), stdin=subprocess.DEVNULL, stdout=slave,
                                        stderr=subprocess.PIPE)
        os.close(slave)
        self.pending = b""

    def line(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            assert left > 0, f"no line within {timeout}s: {self.pending!r}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: the process closed its end
                    chunk = b""
                assert chunk, f"the output ended: {self.pending!r}"
                self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return ANSI.sub("", line.decode().rstrip("\r"))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)
        os.close(self.master)
        assert self.process.returncode == 0


def join_token_on_terminal(home: Path, data: Path) -> str:
    terminal = Terminal(home, data, "--no-node", "--disable", "scheduler,controllers,proxy")
    try:
        while not (line := terminal.line()).startswith("minik: ready in"):
            pass
        while not (line := terminal.line()).startswith("  add a node:  "):
            pass
        join = re.fullmatch(r"  add a node:  minik node join --server https://127\.0\.0\.1:\d+ --token "
                            r"([a-z0-9]{6}\.[a-z0-9]{16}) --ca-hash sha256:[0-9a-f]{64}", line)
        assert join, "no join line"
        return join.group(1)
    finally:
        terminal.stop()


def test_up_on_a_terminal_shows_each_part_as_it_becomes_ready_then_how_to_use_the_cluster(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    terminal = Terminal(home, data, "--runtime", "fake", "--node-name", "shown", "--disable", "controllers")
    try:
        assert terminal.line() == f"minik: starting cluster 'minik' (data in {data})"
        rows = []
        while not (line := terminal.line()).startswith("minik: ready in"):
            rows.append(line)
        parts = [re.match(r"  (\S+) (API server|\S+)\s*(.*?)\s*(?:\d+\.\d\ds)?$", row) for row in rows]
        assert all(parts), rows
        shown = [(p.group(1), p.group(2)) for p in parts if p]
        # the store and the API first, then the others, each as it becomes ready (the node and the proxy in either
        # order: they finish starting in the background)
        assert shown[:3] == [("✓", "store"), ("✓", "API server"), ("✓", "scheduler")], rows
        assert sorted(shown[3:]) == [("-", "controllers"), ("✓", "node"), ("✓", "proxy")], rows
        assert [row for row in rows if "shown (fake)" in row], rows
        url = re.fullmatch(r"  API:         (https://127\.0\.0\.1:\d+)", terminal.line())
        assert url, "no API line"
        assert terminal.line() == f"  kubeconfig:  {data / 'kubeconfig'}"
        assert "kubectl --kubeconfig" in terminal.line()
        assert re.fullmatch(rf"  add a node:  minik node join --server {re.escape(url.group(1))} --token "
                            r"[a-z0-9]{6}\.[a-z0-9]{16} --ca-hash sha256:[0-9a-f]{64}", terminal.line())
        assert terminal.line() == "  stop:        Ctrl-C"
    finally:
        terminal.stop()


def test_up_on_a_terminal_prints_the_join_command_whose_token_lasts_a_day(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    token = join_token_on_terminal(home, data)
    assert join_token_on_terminal(home, data) == token  # as kubeadm init's, the next up prints the same one
    assert_private(data)
    assert_holds_no_secret(data, token.split(".")[1], kubeconfig_endpoint(data / "kubeconfig").token or "")


#: the files that may hold the admin token or a join token's secret: the credentials, the admin kubeconfig, the
#: store (which keeps bootstrap tokens as Kubernetes keeps them, in Secrets)
HOLDERS = ("pki", "kubeconfig", "state.db", "state.db-wal", "state.db-shm")


def assert_private(data: Path) -> None:
    """The data directory and every directory in it 0700, every file 0600."""
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for path in data.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path} is {oct(mode)}"


def assert_holds_no_secret(data: Path, *secrets: str) -> None:
    """No file of the data directory but HOLDERS contains any of ``secrets`` (as they are, or base64)."""
    assert all(secrets)
    forms = [form for secret in secrets for form in (secret.encode(), base64.b64encode(secret.encode()))]
    checked = 0
    for path in data.rglob("*"):
        if path.is_file() and path.relative_to(data).parts[0] not in HOLDERS:
            content = path.read_bytes()
            assert not [form for form in forms if form in content], f"{path} holds a token"
            checked += 1
    assert checked >= 2  # minik.log and minik.lock at least


def detached_join_token(up: subprocess.CompletedProcess[str]) -> str:
    assert up.returncode == 0, up.stderr
    join = re.search(r"^minik: add a node with: .* --token ([a-z0-9]{6}\.[a-z0-9]{16}) ", up.stdout, re.MULTILINE)
    assert join, up.stdout  # printed by the parent, for the person who ran it
    return join.group(1)


def test_up_detached_keeps_its_data_private_and_tokens_only_in_its_credentials(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    token = detached_join_token(run(home, "up", "-d", "--data-dir", str(data), "--port", "0", "--no-node",
                                    "--disable", "scheduler"))
    admin_token = kubeconfig_endpoint(data / "kubeconfig").token or ""
    try:
        assert_private(data)
        assert_holds_no_secret(data, token.split(".")[1], admin_token)
        assert "ready in" in (data / "minik.out").read_text()
    finally:
        assert run(home, "down", "--data-dir", str(data)).returncode == 0
    assert_private(data)
    assert_holds_no_secret(data, token.split(".")[1], admin_token)


def test_an_older_data_directory_is_made_private_and_the_join_token_it_exposed_is_replaced(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    up = ["up", "-d", "--data-dir", str(data), "--port", "0", "--no-node", "--disable", "scheduler"]
    old = detached_join_token(run(home, *up))
    assert run(home, "down", "--data-dir", str(data)).returncode == 0
    # as an older minik left it: everything readable, the join command in its console output
    with open(data / "minik.out", "a") as console:
        console.write(f"minik: add a node with: minik node join --server https://x:6443 --token {old} --ca-hash h\n")
    for path in [data, *data.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)

    new = detached_join_token(run(home, *up))
    try:
        assert new != old
        assert_private(data)
        with pytest.raises(urllib.error.HTTPError) as gone:  # the exposed token no longer joins anything
            http("GET", f"{json.loads((data / 'running.json').read_text())['url']}/api/v1/namespaces/kube-system/"
                        f"secrets/bootstrap-token-{old.split('.')[0]}", data / "kubeconfig")
        assert gone.value.code == 404
    finally:
        assert run(home, "down", "--data-dir", str(data)).returncode == 0


def test_up_whose_terminal_is_gone_still_closes_its_store_on_sighup(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    process, _url = start(home, data)
    assert process.stdout is not None
    process.stdout.close()  # the terminal went away: every later line hits a closed pipe
    process.send_signal(signal.SIGHUP)
    assert process.wait(timeout=30) == 0
    assert not (data / "running.json").exists()
    assert run(home, "status", "--data-dir", str(data)).returncode == 3


def test_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(tmp_path / "home", "up", "--port", str(port), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: the address is already in use (another cluster or program has "
        "the port; choose another with --port)"]
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("value", ["sched", "scheduler,kubelet"])
def test_unknown_components_are_a_usage_error(tmp_path: Path, value: str) -> None:
    result = CliRunner(env={"HOME": str(tmp_path)}).invoke(cli, ["up", "--disable", value])
    assert result.exit_code == 2
    assert "Invalid value for '--disable': unknown component" in result.stderr
    assert "scheduler, controllers, node, proxy" in result.stderr


def test_client_commands_without_a_cluster_say_how_to_start_one(tmp_path: Path) -> None:
    result = CliRunner(env={"HOME": str(tmp_path)}).invoke(cli, ["get", "pods"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no minik cluster \"minik\" found")
    assert "minik up -d" in result.stderr
    refused = CliRunner(env={"HOME": str(tmp_path)}).invoke(cli, ["get", "pods", "--server", "http://127.0.0.1:1"])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == ("The connection to the server 127.0.0.1:1 was refused - did you specify the "
                                      "right host or port?")
