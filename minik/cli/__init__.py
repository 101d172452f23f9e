"""The `minik` command: one click group, one module per command group."""

from __future__ import annotations

import click

from minik import __version__
from minik.cli.up import up


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="minik")
def cli() -> None:
    """minik: a Kubernetes-style cluster in one process."""


cli.add_command(up)


def main() -> None:
    cli()
