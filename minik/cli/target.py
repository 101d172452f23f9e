"""Where a client command's server is, found as kubectl finds it.

The kubeconfig is --kubeconfig's file, else the files $KUBECONFIG lists (merged: see ``kubeconfig.load_merged``),
else the local cluster's (~/.minik/minik/kubeconfig, which `minik up` writes). --context picks one of its contexts
(default: its current context); --server replaces the server of that context's cluster and keeps the cluster's CA
and the user's credentials (with no kubeconfig at all, it is the server alone, as kubectl's -s is); -n, given to
each command, replaces the context's namespace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from minik import kubeconfig
from minik.cli.errors import fail
from minik.kubeconfig import Config, Endpoint

#: the default cluster client commands talk to when neither --kubeconfig nor $KUBECONFIG is given
DEFAULT_CLUSTER = "minik"


def default_data_dir(name: str) -> Path:
    return Path.home() / ".minik" / name


@dataclass
class Target:
    """How a client command reaches the API: --server, --kubeconfig and --context as given."""

    server: str | None = None
    kubeconfig: Path | None = None
    context: str | None = None

    def endpoint(self) -> Endpoint:
        server = self.server.rstrip("/") if self.server else None
        try:
            loaded = self._config()
            if loaded is None or (server and not self.context and not loaded[0].get("current-context")):
                assert server is not None
                return Endpoint(server)  # -s with no kubeconfig to take credentials from
            found = kubeconfig.endpoint_of(loaded[0], self.context, loaded[1])
        except kubeconfig.KubeconfigError as exc:
            raise fail(f"invalid kubeconfig: {exc}") from None
        return dataclasses.replace(found, server=server) if server else found

    def _config(self) -> tuple[Config, str] | None:
        """The kubeconfig to use and how to name it in messages; None when there is none and --server says
        where the server is."""
        if self.kubeconfig is not None:
            return kubeconfig.absolute_paths(kubeconfig.read(self.kubeconfig), self.kubeconfig.parent), \
                str(self.kubeconfig)
        paths = kubeconfig.env_paths()
        if paths:
            config = kubeconfig.load_merged(paths)
            if config["contexts"] or config["clusters"] or self.server:
                return config, ":".join(map(str, paths)) if len(paths) > 1 else str(paths[0])
            raise fail("invalid configuration: no configuration has been provided (none of the files "
                              f"in $KUBECONFIG exists: {', '.join(map(str, paths))})")
        path = default_data_dir(DEFAULT_CLUSTER) / "kubeconfig"
        if path.exists():
            return kubeconfig.absolute_paths(kubeconfig.read(path), path.parent), str(path)
        if self.server:
            return None
        raise fail(f'no minik cluster "{DEFAULT_CLUSTER}" found ({path} does not exist): start one '
                          'with "minik up -d", or pass --server URL or --kubeconfig PATH, or set $KUBECONFIG')


_TARGET_KEY = "minik.target"


def current_target(ctx: click.Context) -> Target:
    target = ctx.meta.get(_TARGET_KEY)
    if target is None:
        target = ctx.meta[_TARGET_KEY] = Target()
    return target


def _store(field: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is not None:
            setattr(current_target(ctx), field, value)
    return callback


def target_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--server, --kubeconfig and --context, accepted before the command name (``minik --server URL get po``) or
    after it; they are recorded in the context, not passed to the command."""
    f = click.option("--context", default=None, expose_value=False, callback=_store("context"),
                     help="The kubeconfig context to use [default: its current context].")(f)
    f = click.option("--kubeconfig", default=None, expose_value=False, callback=_store("kubeconfig"),
                     type=click.Path(dir_okay=False, path_type=Path),
                     help=f"Kubeconfig file to use [default: the files in $KUBECONFIG, else the local cluster's, "
                          f"~/.minik/{DEFAULT_CLUSTER}/kubeconfig].")(f)
    f = click.option("--server", "-s", default=None, expose_value=False, callback=_store("server"),
                     help="The API server's URL, in place of the kubeconfig cluster's (its CA and the user's "
                          "credentials are kept).")(f)
    return f
