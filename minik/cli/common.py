"""What every client command shares: where the server is (minik.cli.target), running a
command's coroutine on its own event loop, and turning failures into kubectl's one-line messages on stderr."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import click

from minik import kubeconfig
from minik.api.errors import StatusError
from minik.api.registry import ResourceType

# the commands import these from here
from minik.cli.errors import CliError as CliError
from minik.cli.errors import fail as fail
from minik.cli.target import DEFAULT_CLUSTER as DEFAULT_CLUSTER
from minik.cli.target import Target as Target
from minik.cli.target import current_target
from minik.cli.target import default_data_dir as default_data_dir
from minik.cli.target import target_options as target_options
from minik.client import Client, HttpTransport, TransportError, user_agent
from minik.manifests import ManifestError

T = TypeVar("T")

#: ask for the server's Table rendering, falling back to plain JSON (as kubectl's Accept header does)
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"




# -- errors as kubectl prints them ------------------------------------------------------------------------------
def status_message(exc: StatusError, verb: str | None = None, source: str | None = None) -> str:
    """kubectl's rendering of an API error: ``The Pod "x" is invalid: field: message`` for 422 with causes,
    ``Error from server (Reason): message`` otherwise; ``verb``/``source`` add kubectl's
    ``error when creating "file.yaml": ...``."""
    details = exc.details or {}
    causes = [c for c in details.get("causes") or [] if isinstance(c, dict)]
    if exc.reason == "Invalid" and (details.get("kind") or details.get("name")):
        head = f'The {details.get("kind", "")} "{details.get("name", "")}" is invalid'
        lines = [f'{c.get("field")}: {c.get("message")}' if c.get("field") else str(c.get("message"))
                 for c in causes]
        if not lines:
            return head
        if len(lines) == 1:
            return f"{head}: {lines[0]}"
        return f"{head}: \n" + "\n".join(f"* {line}" for line in lines)
    message = exc.message or f"the server responded with HTTP {exc.code}"
    if verb and source:
        message = f'error when {verb} "{source}": {message}'
    return f"Error from server ({exc.reason or 'Unknown'}): {message}"


def transport_message(exc: TransportError, server: str) -> str:
    host = server.split("://", 1)[-1].rstrip("/")
    if isinstance(exc.__cause__, aiohttp.ClientConnectorError):
        return f"The connection to the server {host} was refused - did you specify the right host or port?"
    return f"Unable to connect to the server: {exc}"


# -- where the server is: minik.cli.target -------------------------------------------------------------------
def namespace_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--namespace", "-n", default=None,
                        help="Namespace [default: the kubeconfig context's, else default].")(f)


class _TableTransport(HttpTransport):
    """HTTP that asks for the server's Table rendering (and takes plain JSON from a server without one)."""

    def __init__(self, endpoint: kubeconfig.Endpoint) -> None:
        super().__init__(endpoint.server, endpoint.token, ssl=endpoint.ssl_context())
        self._headers["Accept"] = TABLE_ACCEPT


@dataclass
class Session:
    """The resolved target of one command: its endpoint and the default namespace."""

    endpoint: kubeconfig.Endpoint

    @classmethod
    def current(cls) -> Session:
        return cls(current_target(click.get_current_context()).endpoint())

    def namespace(self, given: str | None) -> str:
        return given or self.endpoint.namespace

    def client(self, program: str = "minik") -> Client:
        """A client to the target; ``program`` names its User-Agent, and so the field manager of its writes."""
        return Client.http(self.endpoint.server, self.endpoint.token, ssl=self.endpoint.ssl_context(),
                           agent=user_agent(program))

    def table_client(self) -> Client:
        return Client(_TableTransport(self.endpoint))

    def run(self, main: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a command's coroutine on a new event loop, turning API, connection and manifest failures into
        kubectl-like messages (exit code 1) and Ctrl-C into a quiet exit 130."""
        try:
            return asyncio.run(main())
        except StatusError as exc:
            raise CliError(status_message(exc)) from None
        except TransportError as exc:
            raise CliError(transport_message(exc, self.endpoint.server)) from None
        except ManifestError as exc:
            raise CliError("\n".join(f"error: {p}" for p in exc.problems)) from None
        except KeyboardInterrupt:
            sys.stdout.flush()
            raise click.exceptions.Exit(130) from None


# -- kinds ------------------------------------------------------------------------------------------------------
def kind_label(rt: ResourceType) -> str:
    """``pod``, ``deployment.apps``: how kubectl names a kind in ``KIND/NAME`` and in apply's output."""
    return f"{rt.kind.lower()}.{rt.group}" if rt.group else rt.kind.lower()


def resolve_kind(name: str) -> ResourceType:
    """The resource a user typed (plural, singular, short name, kind or ``plural.group``)."""
    from minik.api.resources import REGISTRY

    rt = REGISTRY.resolve(name)
    if rt is None:
        raise fail(f'the server doesn\'t have a resource type "{name}"')
    return rt
