"""A command's user-facing failure: one message in kubectl's words on stderr, exit code 1."""

from __future__ import annotations

from typing import Any

import click


class CliError(click.ClickException):
    """A user-facing failure: its message goes to stderr as it is (already in kubectl's words), exit code 1."""

    def show(self, file: Any = None) -> None:
        click.echo(self.message, err=True)


def fail(message: str) -> CliError:
    return CliError(f"error: {message}")
