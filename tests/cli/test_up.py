"""`minik up` (foreground and --detach), `status`, `down` and `kubeconfig`, as real processes: the ready line, the
kubeconfig kubectl uses at once, a clean stop on SIGTERM that keeps the data, and clear errors."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from cli_helpers import minik_command, subprocess_env

from minik.cli import cli
from minik.kubeconfig import endpoint as kubeconfig_endpoint

READY = re.compile(r"^minik: ready in [0-9.]+s, API at (https://127\.0\.0\.1:\d+) \(kubeconfig: (\S+)\)$")


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(minik_command(*args), env=subprocess_env(home, **env), capture_output=True, text=True,
                          timeout=60)


def http(method: str, url: str, config: Path, body: dict | None = None) -> dict:
    """A request with the credentials and the CA of the kubeconfig `minik up` wrote (HTTPS, admin token)."""
    endpoint = kubeconfig_endpoint(config)
    context = endpoint.ssl_context()
    assert isinstance(context, ssl.SSLContext)
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {endpoint.token}"})
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


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


def start(home: Path, data: Path) -> tuple[subprocess.Popen[str], str, str]:
    """`minik up` in the foreground: (the process, the API's URL, the join token its join command carries)."""
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
    join = re.fullmatch(rf"minik: add a node with: minik node join --server {re.escape(ready.group(1))} --token "
                        r"([a-z0-9]{6}\.[a-z0-9]{16}) --ca-hash sha256:[0-9a-f]{64}\n", process.stdout.readline())
    assert join, "no join line"
    return process, ready.group(1), join.group(1)


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    out, _err = process.communicate(timeout=30)
    assert process.returncode == 0
    return out


def test_up_in_the_foreground_stops_on_sigterm_and_the_next_up_carries_on(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    process, url, token = start(home, data)
    try:
        http("POST", url + "/api/v1/namespaces/default/configmaps", data / "kubeconfig",
             {"metadata": {"name": "kept"}})
        assert json.loads((data / "running.json").read_text())["url"] == url
    finally:
        out = stop(process)
    assert out.splitlines() == ["minik: shutting down", f"minik: stopped; state kept in {data}"]
    assert not (data / "running.json").exists()
    assert run(home, "status", "--data-dir", str(data)).returncode == 3

    process, url, again = start(home, data)
    assert again == token  # the join command's token lasts a day, as kubeadm init's
    try:
        assert http("GET", url + "/api/v1/namespaces/default/configmaps/kept",
                    data / "kubeconfig")["metadata"]["name"] == "kept"
    finally:
        stop(process)


def test_up_whose_terminal_is_gone_still_closes_its_store_on_sighup(tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    process, _url, _token = start(home, data)
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
