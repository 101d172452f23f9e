"""The `minik` command: one click group, one module per command group.

Cluster life: up, status, kubeconfig (up.py); down, delete-cluster (down.py). Client commands, which reach the API like kubectl: apply,
get, describe, delete. Human output goes to stdout, errors to stderr with a non-zero exit code.
"""

from __future__ import annotations

import click

from minik import __version__
from minik.cli.apply import apply
from minik.cli.common import target_options
from minik.cli.containers import exec_command, logs
from minik.cli.controllers import controllers
from minik.cli.delete import delete
from minik.cli.describe import describe
from minik.cli.down import delete_cluster, down
from minik.cli.get import get
from minik.cli.node import node
from minik.cli.scheduling import explain, scheduler
from minik.cli.token import token
from minik.cli.up import kubeconfig_path, status, up


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="minik")
@target_options
def cli() -> None:
    """minik: a Kubernetes-style cluster in one process.

    Start one with `minik up -d`; `minik get`, `apply`, `describe`, `delete`, `logs` and `exec` then talk to it
    (or to the cluster of $KUBECONFIG or --kubeconfig, as kubectl does), and so does kubectl with --kubeconfig
    $(minik kubeconfig). `minik delete-cluster` removes one with its containers and data.
    """


for command in (up, down, delete_cluster, status, kubeconfig_path, apply, get, describe, delete, scheduler, explain, controllers,
                logs, exec_command, node, token):
    cli.add_command(command)


def main() -> None:
    cli()
