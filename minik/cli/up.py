"""The cluster's life on this machine: `minik up` (foreground or --detach), `minik status` and
`minik kubeconfig` (`minik down` and `minik delete-cluster` are in down.py).

The join command (it carries a join token) is shown to a person only, never written to a file: `minik up` in
the foreground prints it when its output is a terminal (else how to make one: `minik token create
--print-join-command`); with --detach, the background process writes its output to DATA_DIR/minik.out without
it, and the parent asks the API for the token with the admin kubeconfig and prints the command on its own
output. The data directory is 0700 and every file minik writes in it 0600 (``minik.pki.files``); one an
older minik left readable is tightened at start, and when its minik.out was readable the join tokens `minik up`
printed into it are revoked (the next join command carries a new one).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import yaml

from minik import kubeconfig
from minik import log as logging_setup
from minik.aio import start_task, stop_task
from minik.api.errors import StatusError
from minik.cli import network, progress
from minik.cli.common import CliError, default_data_dir, fail
from minik.cli.instance import AlreadyRunning, Instance, RunState
from minik.cli.output import align, human_duration, parse_time
from minik.client import Client, TransportError
from minik.cluster import COMPONENTS, Cluster, ClusterSettings, is_loopback
from minik.collector import freeze_survivors, settle_after_start
from minik.pki.files import open_private, private_data_dir

#: how long `up --detach` waits for the cluster to answer /readyz, and `down` for it to exit
WAIT_SECONDS = 30.0


def run(main: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop where it is installed (it roughly halves the event loop's own cost), else on asyncio's."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def _components(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> frozenset[str]:
    chosen = {part.strip().lower() for value in values for part in value.split(",") if part.strip()}
    unknown = sorted(chosen - set(COMPONENTS))
    if unknown:
        raise click.BadParameter(f"unknown component {', '.join(map(repr, unknown))}: choose from "
                                 f"{', '.join(COMPONENTS)}")
    return frozenset(chosen)


def _service_cidr(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        parsed = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a CIDR (e.g. 10.96.0.0/12)") from None
    if parsed.num_addresses < 8:
        raise click.BadParameter(f"{value} is too small: a service range needs at least 8 addresses")
    return str(parsed)


def _listen_error(settings: ClusterSettings, exc: OSError) -> CliError:
    where = f"{settings.bind}:{settings.port}"
    if exc.errno == errno.EADDRINUSE:
        return fail(f"cannot listen on {where}: the address is already in use (another cluster or program "
                    "has the port; choose another with --port)")
    reason = (exc.strerror or str(exc)).rsplit(": ", 1)[-1]
    return fail(f"cannot listen on {where}: {reason}")


def _ready_line(seconds: float, url: str, kubeconfig_path: Path) -> str:
    return f"minik: ready in {seconds:.2f}s, API at {url} (kubeconfig: {kubeconfig_path})"


def _join_url(bind: str, url: str) -> str:
    """The API's URL as another machine reaches it: a server bound to every address is named by this machine's
    default-route address rather than loopback."""
    if bind not in ("0.0.0.0", "::"):
        return url
    from minik.kubelet.node import host_address

    scheme, _, rest = url.partition("://")
    port = rest.rsplit(":", 1)[-1]
    return f"{scheme}://{host_address()}:{port}"


#: what the foreground `minik up` prints instead of the join command when its output is not a terminal (a log
#: file, a journal): a token must not be kept there
JOIN_HINT = "minik: to add a node, make a join command with: minik token create --print-join-command"


async def _join_line(client: Client, url: str, ca_hash: str, *, renew: bool = False, show: bool = True) -> str:
    """The command that adds a node to this cluster, as kubeadm init prints it: a join token of its own (valid for
    a day) and the hash of the cluster CA the joining node pins. ``renew``: revoke the tokens it printed before;
    ``show`` False: no token, JOIN_HINT."""
    from minik.cli.token import revoke_up_join_tokens, up_join_token
    from minik.kubelet.join import join_command

    try:
        if renew:
            await revoke_up_join_tokens(client)
        if not show:
            return JOIN_HINT
        token = await up_join_token(client)
    except (StatusError, TransportError) as exc:
        return f"minik: warning: no join token was made ({exc}); make one with `minik token create`"
    return f"minik: add a node with: {join_command(url, token, ca_hash)}"


def _detached_join_line(kubeconfig_path: Path, url: str, *, renew: bool = False) -> str:
    """The join line for a cluster started in the background, made with the admin kubeconfig it wrote."""
    try:
        endpoint = kubeconfig.endpoint(kubeconfig_path)
    except (kubeconfig.KubeconfigError, OSError):
        return ""
    if not endpoint.ca_data or not endpoint.server.startswith("https://"):
        return ""  # plain HTTP on loopback: no CA to pin, nothing to join over
    from minik.pki.ca import load_cert, public_key_hash

    lines: list[str] = []

    async def main() -> None:
        async with Client.http(endpoint.server, endpoint.token, ssl=endpoint.ssl_context(),
                               timeout_seconds=10) as client:
            lines.append(await _join_line(client, url, public_key_hash(load_cert(endpoint.ca_data or b"")),
                                          renew=renew))

    run(main())
    return lines[0]


def _selector_args(name: str, data_dir: Path) -> str:
    """The options `down`/`status` need to find this cluster again."""
    if data_dir.resolve() != default_data_dir(name).resolve():
        return f" --data-dir {data_dir}"
    return f" --name {name}" if name != "minik" else ""


def _merge_user_kubeconfig(name: str, config: kubeconfig.Config) -> None:
    user_path = kubeconfig.user_kubeconfig_path()
    try:
        current = kubeconfig.merge(user_path, config)
    except (kubeconfig.KubeconfigError, OSError) as exc:
        click.echo(f"minik: warning: {user_path} not updated: {exc}", err=True)
        return
    click.echo(f"minik: context {name!r} merged into {user_path}" + (" (and made current)" if current else ""))


async def _serve(settings: ClusterSettings, instance: Instance, update_kubeconfig: bool,
                 renew_join_token: bool = False) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal went away
        loop.add_signal_handler(sig, stop.set)
    shown = progress.for_output()
    cluster = Cluster(settings, progress=shown.step)
    click.echo(f"minik: starting cluster {settings.name!r} (data in {settings.data_dir})")
    try:
        await cluster.start()
    except OSError as exc:
        raise _listen_error(settings, exc) from None
    settle_after_start()  # the collector, set for a long-running process (minik.collector)
    try:
        path = instance.kubeconfig_path
        config = cluster.kubeconfig()
        try:
            kubeconfig.write(path, config)
        except OSError as exc:
            raise fail(f"cannot write {path}: {exc.strerror or exc}") from None
        if update_kubeconfig:
            _merge_user_kubeconfig(settings.name, config)
        instance.publish(cluster.url, settings.name, tuple(sorted(settings.disabled)), settings.service_cidr)
        await shown.after_start(cluster)
        lines = [f"minik: disabled: {', '.join(sorted(settings.disabled))}"] if settings.disabled else []
        lines.append(_ready_line(cluster.started_seconds, cluster.url, path))
        join: str | None = None
        creds = cluster.credentials
        if not settings.plain_http and creds is not None and cluster.client is not None:
            # a person reads a terminal; a log file or journal would keep the token
            join = await _join_line(cluster.client, _join_url(settings.bind, cluster.url), creds.ca_hash,
                                    renew=renew_join_token, show=sys.stdout.isatty())
            lines.append(join)
        shown.ready(lines, cluster.started_seconds, cluster.url, path, join)
        sys.stdout.flush()
        freezer = start_task(freeze_survivors(), "freeze survivors")
        try:
            await stop.wait()
        finally:
            await stop_task(freezer)
    finally:
        _say("minik: shutting down")
        instance.state_path.unlink(missing_ok=True)
        await cluster.stop()
        _say(f"minik: stopped; state kept in {settings.data_dir}")


def _say(line: str) -> None:
    """Print a progress line during shutdown; a closed terminal or pipe must not stop the store from closing."""
    try:
        click.echo(line)
    except OSError:
        pass


def _child_args(ctx: click.Context, data_dir: Path, port: int, service_cidr: str) -> list[str]:
    """The command line of the background `minik up`: this one, without --detach, with the port and service range
    chosen."""
    p = ctx.params
    args = [sys.executable, "-m", "minik", "up", "--name", p["name"], "--data-dir", str(data_dir.resolve()),
            "--bind", p["bind"], "--port", str(port), "--service-cidr", service_cidr, "--sync", p["synchronous"],
            "--log-level", p["log_level"]]
    if p["log_file"] is not None:
        args += ["--log-file", str(p["log_file"]) if str(p["log_file"]) == "-" else str(p["log_file"].resolve())]
    for component in sorted(p["disabled"]):
        args += ["--disable", component]
    if p["no_node"]:
        args.append("--no-node")
    if p["fake_nodes"]:
        args += ["--fake-nodes", str(p["fake_nodes"])]
    if p["node_name"]:
        args += ["--node-name", p["node_name"]]
    if p["runtime"] != "auto":
        args += ["--runtime", p["runtime"]]
    if p["update_kubeconfig"]:
        args.append("--update-kubeconfig")
    if p["plain_http"]:
        args.append("--plain-http")
    for san in p["tls_san"]:
        args += ["--tls-san", san]
    return args


def _answers_ready(url: str, ca_path: Path) -> bool:
    """Whether the cluster answers /readyz (over HTTPS, trusting only the cluster's own CA)."""
    context = None
    if url.startswith("https://"):
        try:
            context = ssl.create_default_context(cafile=str(ca_path))
        except (OSError, ssl.SSLError):
            return False
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=1, context=context) as response:  # noqa: S310
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _detach(ctx: click.Context, name: str, instance: Instance, renew_join_token: bool, port: int,
            service_cidr: str) -> None:
    began = time.monotonic()
    console_path = instance.console_path
    with os.fdopen(open_private(console_path), "ab") as console:
        offset = os.lseek(console.fileno(), 0, os.SEEK_END)
        process = subprocess.Popen(_child_args(ctx, instance.data_dir, port, service_cidr), stdin=subprocess.DEVNULL,
                                   stdout=console,
                                   stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    click.echo(f"minik: starting cluster {name!r} in the background (data in {instance.data_dir})")
    state: RunState | None = None
    while True:
        code = process.poll()
        if code is not None:
            with open(console_path, "rb") as console:
                console.seek(offset)
                output = console.read().decode("utf-8", "replace").splitlines()
            errors = [line for line in output if line.startswith(("error", "Error", "Usage"))] or output[-5:]
            raise CliError("\n".join(errors) or f"error: minik up exited with code {code}")
        state = instance.running()
        if state is not None and state.pid == process.pid and state.url and \
                _answers_ready(state.url, instance.data_dir / "pki" / "ca.crt"):
            break
        if time.monotonic() - began > WAIT_SECONDS:
            process.terminate()
            raise fail(f"the cluster did not become ready within {WAIT_SECONDS:.0f}s; see {console_path}")
        time.sleep(0.05)
    process.returncode = 0  # it lives on in the background: nothing here will wait for it
    click.echo(_ready_line(time.monotonic() - began, state.url, instance.kubeconfig_path))
    click.echo(f"minik: running in the background as PID {process.pid} (output in {console_path}); "
               f"stop it with: minik down{_selector_args(name, instance.data_dir)}")
    join_line = _detached_join_line(instance.kubeconfig_path, _join_url(ctx.params["bind"], state.url),
                                    renew=renew_join_token)
    if join_line:
        click.echo(join_line)


@click.command()
@click.option("--name", default="minik", show_default=True,
              help="Cluster name: names the kubeconfig context and the default data directory.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="State directory [default: ~/.minik/NAME].")
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address the API server listens on.")
@click.option("--port", default=None, type=click.IntRange(0, 65535),
              help="API server port (0 picks a free one) [default: the one the cluster last used, else 6443, or the "
                   "next free port when another minik cluster has that one].")
@click.option("--detach", "-d", is_flag=True,
              help="Start in the background, return once the API answers /readyz (stop it with `minik down`).")
@click.option("--disable", "disabled", multiple=True, metavar="COMPONENT", callback=_components,
              help=f"Do not start a component: {', '.join(COMPONENTS)} (repeat, or separate with commas), e.g. "
                   "to run it elsewhere (`minik scheduler --server URL`) or not at all.")
@click.option("--service-cidr", default=None, callback=_service_cidr,
              help="The range Service cluster IPs are allocated from [default: the one the cluster was made with, "
                   "else 10.96.0.0/12, or the next free /12 when another minik cluster has that one].")
@click.option("--no-node", is_flag=True, help="Do not run a node for this machine.")
@click.option("--fake-nodes", default=0, show_default=True, type=click.IntRange(0),
              help="Add this many simulated nodes (no containers; pods run after a short delay).")
@click.option("--node-name", default=None, help="The local node's name [default: the host name].")
@click.option("--runtime", type=click.Choice(["auto", "docker", "process", "fake"]), default="auto",
              show_default=True, help="The local node's runtime (auto: Docker when it answers, else process).")
@click.option("--plain-http", is_flag=True,
              help="Serve plain HTTP instead of HTTPS, only with a loopback --bind (for benchmarks against "
                   "plain-HTTP servers). Requests are authenticated all the same: the kubeconfig holds the admin "
                   "token, which minik's commands send (kubectl sends no credentials without TLS).")
@click.option("--tls-san", multiple=True, metavar="NAME",
              help="Another host name or address for the serving certificate (repeat), e.g. the address other "
                   "machines reach this one at through NAT.")
@click.option("--update-kubeconfig", is_flag=True,
              help="Also merge a context named after the cluster into $KUBECONFIG or ~/.kube/config (made current "
                   "only if none is).")
@click.option("--sync", "synchronous", type=click.Choice(["FULL", "NORMAL"], case_sensitive=False), default="FULL",
              show_default=True, help="Durability: FULL survives power loss, NORMAL only a process crash.")
@click.option("--log-level", default="info", show_default=True, help="Log level for the JSON log.")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the JSON log goes [default: DATA_DIR/minik.log; '-' for stderr].")
@click.pass_context
def up(ctx: click.Context, name: str, data_dir: Path | None, bind: str, port: int | None, detach: bool,
       disabled: frozenset[str], service_cidr: str | None, no_node: bool, fake_nodes: int, node_name: str | None,
       runtime: str, plain_http: bool, tls_san: tuple[str, ...], update_kubeconfig: bool, synchronous: str,
       log_level: str, log_file: Path | None) -> None:
    """Start a cluster: in the foreground until Ctrl-C or SIGTERM, or in the background with --detach.

    It always writes DATA_DIR/kubeconfig, so `kubectl --kubeconfig DATA_DIR/kubeconfig get ns` works at once, and
    `minik get ...` finds the cluster named minik by itself. Stopping keeps every object: the next `minik up` on
    the same data directory carries on.
    """
    data = data_dir or default_data_dir(name)
    if plain_http and not is_loopback(bind):
        raise fail(f"--plain-http serves plain HTTP and only on a loopback address, not on {bind}")
    instance = Instance(data)
    running = instance.running()
    if running is not None:
        where = f" at {running.url}" if running.url else ""
        raise fail(f"cluster {name!r} is already running (PID {running.pid}{where}); stop it with: "
                   f"minik down{_selector_args(name, data)}")
    try:  # an older minik printed join tokens into a console output others could read: replace them
        renew_join_token = instance.console_path in private_data_dir(data)
    except OSError as exc:
        raise fail(f"cannot make {data} private: {exc.strerror or exc}") from None
    try:
        chosen_cidr, chosen_port = network.service_cidr(service_cidr, data), network.port(port, data, bind)
    except ValueError as exc:
        raise fail(str(exc)) from None
    for note in (chosen_cidr.note, chosen_port.note):
        if note:
            click.echo(note, err="warning:" in note)
    service_cidr, port = str(chosen_cidr.value), int(chosen_port.value)
    if detach:
        _detach(ctx, name, instance, renew_join_token, port, service_cidr)
        return
    try:
        instance.acquire()
    except AlreadyRunning as exc:
        raise fail(f"cluster {name!r} is already running (PID {exc.pid})") from None
    try:
        if str(log_file) == "-":
            logging_setup.configure(log_level, stream=sys.stderr)
        else:
            logging_setup.configure(log_level, path=log_file or data / "minik.log")
        settings = ClusterSettings(data_dir=data, name=name, bind=bind, port=port, synchronous=synchronous.upper(),
                                   disabled=disabled, service_cidr=service_cidr, local_node=not no_node,
                                   fake_nodes=fake_nodes, node_name=node_name, node_runtime=runtime,
                                   plain_http=plain_http, tls_sans=tls_san)
        network.record(data, service_cidr, port)
        run(_serve(settings, instance, update_kubeconfig, renew_join_token))
    finally:
        instance.release()


def cluster_options(f: Any) -> Any:
    f = click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="The cluster's state directory [default: ~/.minik/NAME].")(f)
    f = click.option("--name", default="minik", show_default=True, help="Cluster name.")(f)
    return f


async def _object_counts(url: str, kubeconfig_path: Path) -> str:
    from minik.client import Client

    counts = []
    try:
        endpoint = kubeconfig.endpoint(kubeconfig_path)
    except kubeconfig.KubeconfigError:
        endpoint = kubeconfig.Endpoint(url)
    async with Client.http(url, endpoint.token, timeout_seconds=2, ssl=endpoint.ssl_context()) as client:
        for plural in ("namespaces", "nodes", "pods", "deployments", "services"):
            page = await client.list(plural, limit=1)
            meta = page.get("metadata") or {}
            counts.append(f"{len(page.get('items') or []) + int(meta.get('remainingItemCount') or 0)} {plural}")
    return ", ".join(counts)


@click.command()
@cluster_options
def status(name: str, data_dir: Path | None) -> None:
    """Say whether a cluster is running: its PID, API URL, uptime and object counts. Exit code 3 when it is not
    running (as LSB status commands)."""
    instance = Instance(data_dir or default_data_dir(name))
    state = instance.running()
    if state is None:
        click.echo(f"minik: cluster {name!r} is not running (data in {instance.data_dir})")
        raise click.exceptions.Exit(3)
    started = parse_time(state.started_at)
    uptime = human_duration((datetime.now(UTC) - started).total_seconds()) if started else "?"
    click.echo(f"minik: cluster {name!r} is running (PID {state.pid}, up {uptime})")
    rows = [["  API:", state.url or "(starting)"], ["  kubeconfig:", state.kubeconfig or "-"],
            ["  data:", str(instance.data_dir)]]
    if state.disabled:
        rows.append(["  disabled:", ", ".join(state.disabled)])
    if state.url:
        try:
            rows.append(["  objects:", asyncio.run(_object_counts(state.url, instance.kubeconfig_path))])
        except Exception:  # noqa: BLE001 - counts are a nicety; a busy or odd server must not fail status
            pass
    for line in align(rows, minwidth=0, padding=1):
        click.echo(line)


@click.command("kubeconfig")
@cluster_options
@click.option("--user", "user_name", default=None, metavar="NAME",
              help="Issue a client certificate for this person (signed by the cluster CA, on the cluster's machine) "
                   "and print a kubeconfig that uses it, instead of the admin kubeconfig's path.")
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="A group of --user (repeatable).")
@click.option("--days", default=365, show_default=True, type=click.IntRange(min=1, max=3650),
              help="How long --user's certificate is valid.")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write --user's kubeconfig to this file (mode 0600) instead of printing it.")
def kubeconfig_path(name: str, data_dir: Path | None, user_name: str | None, groups: tuple[str, ...], days: int,
                    output: Path | None) -> None:
    """Print the path of the cluster's kubeconfig (for kubectl --kubeconfig or KUBECONFIG=...); with --user, a
    kubeconfig for a person, who is then what RBAC bindings to that user (or their --group) grant."""
    path = Instance(data_dir or default_data_dir(name)).kubeconfig_path
    if not path.exists():
        raise fail(f"cluster {name!r} has no kubeconfig yet ({path}); start it with: minik up")
    if user_name is None:
        if groups or output is not None:
            raise click.UsageError("--group and --output go with --user")
        click.echo(str(path))
        return
    from minik.cli.users import user_kubeconfig

    try:
        config = user_kubeconfig(path, name, user_name, groups, days)
    except (ValueError, OSError, kubeconfig.KubeconfigError) as exc:
        raise fail(str(exc)) from None
    if output is None:
        click.echo(yaml.safe_dump(config, default_flow_style=False, sort_keys=False), nl=False)
    else:
        kubeconfig.write(output, config)
        click.echo(f"minik: wrote {output} for user {user_name!r} (groups: {', '.join(groups) or 'none'})",
                   err=True)
