"""`minik down` stops a cluster and keeps its state; `minik delete-cluster NAME` (or `minik down --purge`) also
removes what it leaves behind: the Docker containers of its node's pods (labelled ``minik.io/kubelet`` with the
kubelet id kept in DATA_DIR/kubelet/id; they outlive the cluster so that a restart adopts them), the context
`--update-kubeconfig` merged into the user's kubeconfig, and the data directory. A joined node (`minik node
join`) keeps its own containers and data directory: it is not part of the cluster's."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from pathlib import Path

import click

from minik import kubeconfig
from minik.cli.common import default_data_dir, fail
from minik.cli.instance import Instance
from minik.cli.up import WAIT_SECONDS, cluster_options

#: what a data directory holds once `minik up` has used it: one of them must be there before it is removed
DATA_MARKERS = ("minik.lock", "state.db")


def stop(instance: Instance, name: str, timeout: float) -> bool:
    """SIGTERM the process serving ``instance`` and wait for its clean exit; False when none was running."""
    state = instance.running()
    if state is None:
        return False
    if state.pid <= 0:
        raise fail(f"cluster {name!r} is starting up; try again in a moment")
    click.echo(f"minik: stopping cluster {name!r} (PID {state.pid})")
    try:
        os.kill(state.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + timeout
    while instance.locked_pid() is not None:
        if time.monotonic() > deadline:
            raise fail(f"cluster {name!r} (PID {state.pid}) did not stop within {timeout:g}s")
        time.sleep(0.05)
    return True


def purge(instance: Instance, name: str) -> None:
    """Remove a stopped cluster's containers, its kubeconfig entries in the user's kubeconfig and its data
    directory, saying what was removed."""
    data = instance.data_dir
    if not any((data / marker).exists() for marker in DATA_MARKERS):
        raise fail(f"{data} is not a minik data directory (it has no {' or '.join(DATA_MARKERS)}); nothing removed")
    id_path = data / "kubelet" / "id"
    if id_path.exists():
        _remove_containers(id_path.read_text().strip())
    if instance.kubeconfig_path.exists():
        _remove_user_entries(name, instance.kubeconfig_path)
    shutil.rmtree(data)
    click.echo(f"minik: removed {data}")


def _remove_containers(kubelet: str) -> None:
    from minik.kubelet.runtimes.docker import remove_kubelet_containers

    label = f"minik.io/kubelet={kubelet}"
    try:
        removed = asyncio.run(remove_kubelet_containers(kubelet))
    except Exception as exc:  # noqa: BLE001 - an engine that does not answer: say what is left and go on
        click.echo(f"minik: warning: Docker did not answer ({type(exc).__name__}: {exc}); its containers labelled "
                   f"{label}, if any, are left: remove them with docker rm -f $(docker ps -aq --filter "
                   f"label={label})", err=True)
        return
    click.echo(f"minik: removed {removed} Docker container{'' if removed == 1 else 's'} (label {label})")


def _remove_user_entries(name: str, own_path: Path) -> None:
    user_path = kubeconfig.user_kubeconfig_path()
    try:
        removed = kubeconfig.remove_cluster(user_path, kubeconfig.read(own_path))
    except (kubeconfig.KubeconfigError, OSError) as exc:
        click.echo(f"minik: warning: {user_path} not updated: {exc}", err=True)
        return
    if removed:
        click.echo(f"minik: removed context {name!r} from {user_path}")


def _stop_and_purge(name: str, data_dir: Path | None, timeout: float) -> None:
    instance = Instance(data_dir or default_data_dir(name))
    if not instance.data_dir.exists():
        raise fail(f"cluster {name!r} not found: {instance.data_dir} does not exist")
    stop(instance, name, timeout)
    purge(instance, name)
    click.echo(f"minik: cluster {name!r} deleted")


@click.command()
@cluster_options
@click.option("--timeout", default=WAIT_SECONDS, show_default=True, type=click.FloatRange(min=0),
              help="Seconds to wait for a clean exit.")
@click.option("--purge", is_flag=True,
              help="Then delete the cluster: its pods' Docker containers, its context in the user's kubeconfig and "
                   "its data directory (as `minik delete-cluster`).")
def down(name: str, data_dir: Path | None, timeout: float, purge: bool) -> None:
    """Stop a running cluster (SIGTERM, then wait for its clean exit); its state is kept unless --purge."""
    if purge:
        _stop_and_purge(name, data_dir, timeout)
        return
    instance = Instance(data_dir or default_data_dir(name))
    if not stop(instance, name, timeout):
        click.echo(f"minik: cluster {name!r} is not running", err=True)
        return
    click.echo(f"minik: stopped; state kept in {instance.data_dir}")


@click.command("delete-cluster")
@click.argument("name", default="minik")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The cluster's state directory [default: ~/.minik/NAME].")
@click.option("--timeout", default=WAIT_SECONDS, show_default=True, type=click.FloatRange(min=0),
              help="Seconds to wait for a running cluster's clean exit.")
def delete_cluster(name: str, data_dir: Path | None, timeout: float) -> None:
    """Delete a cluster: stop it if it runs, remove its pods' Docker containers, its context in the user's
    kubeconfig (if `minik up --update-kubeconfig` merged one) and its data directory."""
    _stop_and_purge(name, data_dir, timeout)
