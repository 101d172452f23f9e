"""`minik delete`: delete objects named on the command line, selected by labels, or described by manifests, then
wait until they are gone, as `kubectl delete` does."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

import click

from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.api.resources import REGISTRY
from minik.cli.common import (
    CliError,
    Session,
    fail,
    kind_label,
    namespace_option,
    resolve_kind,
    status_message,
    target_options,
)
from minik.client import Client
from minik.manifests import ManifestError, load

Obj = dict[str, Any]

#: what kubectl's --timeout=0 means for delete: wait practically forever
FOREVER_SECONDS = 7 * 24 * 3600.0

_CASCADE = {"background": "Background", "true": "Background", "foreground": "Foreground", "orphan": "Orphan",
            "false": "Orphan"}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (``90s``, ``1m30s``, ``2h``, ``500ms``) or a plain number of seconds."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise click.BadParameter(f"invalid duration {text!r} (use e.g. 30s, 2m, 1h30m)")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * scale[u] for n, u in parts)


@dataclass
class Target:
    resource: ResourceType
    name: str
    namespace: str | None
    source: str | None = None
    """The manifest file it came from, for error messages."""


@dataclass
class Deleted:
    target: Target
    uid: str | None
    gone: bool


def _from_args(args: tuple[str, ...], namespace: str, selector: str | None, all_: bool
               ) -> tuple[list[Target], list[tuple[ResourceType, str | None]]]:
    """Objects named on the command line, and the (type, namespace) pairs to list for -l/--all."""
    if not args:
        raise click.UsageError("you must specify the type of resource to delete, or -f FILE")
    if "/" in args[0]:
        targets = []
        for arg in args:
            kind, _, name = arg.partition("/")
            if not name:
                raise fail(f"arguments in resource/name form must have a single resource and name: {arg!r}")
            rt = resolve_kind(kind)
            targets.append(Target(rt, name, namespace if rt.namespaced else None))
        return targets, []
    types = [resolve_kind(k) for k in args[0].split(",") if k]
    names = args[1:]
    if names and (selector or all_):
        raise fail("names cannot be given together with --selector or --all")
    if not names:
        if not (selector or all_):
            raise fail("resource(s) were provided, but no name was specified")
        return [], [(rt, namespace if rt.namespaced else None) for rt in types]
    return [Target(rt, n, namespace if rt.namespaced else None) for rt in types for n in names], []


async def _delete(client: Client, target: Target, policy: str, grace: int | None) -> Deleted:
    answer = await client.delete(target.resource, target.name, target.namespace, propagation_policy=policy,
                                 grace_period_seconds=grace)
    if answer.get("kind") == "Status":
        return Deleted(target, (answer.get("details") or {}).get("uid"), True)
    return Deleted(target, (answer.get("metadata") or {}).get("uid"), False)


async def wait_gone(client: Client, deleted: Deleted) -> None:
    """Return once the object is gone (or replaced by one with another uid): a list to see where it stands,
    then a watch from there until its DELETED event."""
    t = deleted.target
    selector = f"metadata.name={t.name}"
    while True:
        listing = await client.list(t.resource, t.namespace, field_selector=selector)
        items = listing.get("items") or []
        if not items or (items[0].get("metadata") or {}).get("uid") != deleted.uid:
            return
        version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
        try:
            async with client.watch(t.resource, t.namespace, resource_version=version, field_selector=selector,
                                    allow_bookmarks=True) as events:
                async for kind, obj in events:
                    uid = (obj.get("metadata") or {}).get("uid")
                    if kind == "DELETED" or (kind != "BOOKMARK" and uid != deleted.uid):
                        return
        except StatusError as exc:
            if exc.code != 410:  # history compacted: list again
                raise


@click.command()
@click.argument("args", nargs=-1, metavar="[TYPE[,TYPE...] NAME... | TYPE/NAME... | TYPE -l SELECTOR]")
@click.option("--filename", "-f", "filenames", multiple=True, metavar="FILE|DIR|-",
              help="Delete the objects these manifests describe.")
@click.option("--recursive", "-R", is_flag=True, help="Read directories given with -f recursively.")
@namespace_option
@click.option("--selector", "-l", default=None, help="Delete the objects of TYPE matching this label selector.")
@click.option("--all", "all_", is_flag=True, help="Delete every object of TYPE in the namespace.")
@click.option("--cascade", type=click.Choice(sorted(_CASCADE)), default="background", show_default=True,
              is_flag=False, flag_value="background",
              help="What happens to dependents: deleted in the background, deleted first (foreground), or "
                   "orphaned.")
@click.option("--wait", type=click.BOOL, default=True, show_default=True, is_flag=False, flag_value=True,
              help="Wait until the objects are gone.")
@click.option("--timeout", default="0s", show_default=True,
              help="How long to wait (0: a week, as kubectl).")
@click.option("--grace-period", type=int, default=-1,
              help="Seconds a pod gets to stop (-1: its own setting; 0: at once).")
@click.option("--ignore-not-found", is_flag=True, help="Treat objects that do not exist as deleted.")
@target_options
def delete(args: tuple[str, ...], filenames: tuple[str, ...], recursive: bool, namespace: str | None,
           selector: str | None, all_: bool, cascade: str, wait: bool, timeout: str, grace_period: int,
           ignore_not_found: bool) -> None:
    """Delete objects and wait until they are gone: `minik delete pod web`, `minik delete -f web.yaml`,
    `minik delete deploy web --cascade=orphan`, `minik delete pods -l app=web`.

    Prints `pod "web" deleted` for each.
    """
    session = Session.current()
    ns = session.namespace(namespace)
    seconds = parse_duration(timeout) or FOREVER_SECONDS
    policy = _CASCADE[cascade]
    grace = grace_period if grace_period >= 0 else None
    targets: list[Target] = []
    listings: list[tuple[ResourceType, str | None]] = []
    if filenames:
        if args:
            raise click.UsageError("give either -f FILE or TYPE NAME..., not both")
        try:
            manifests = load(filenames, REGISTRY, recursive)
        except ManifestError as exc:
            raise CliError("\n".join(f"error: {p}" for p in exc.problems)) from None
        targets = [Target(m.resource, m.name, (m.namespace or ns) if m.resource.namespaced else None, m.source)
                   for m in manifests]
    else:
        targets, listings = _from_args(args, ns, selector, all_)

    async def main() -> list[str]:
        problems: list[str] = []
        deleted: list[Deleted] = []
        async with session.client() as client:
            for rt, list_ns in listings:
                listing = await client.list_all(rt, list_ns, label_selector=selector)
                targets.extend(Target(rt, i["metadata"]["name"], list_ns if rt.namespaced else None)
                               for i in listing.get("items") or [])
            if listings and not targets:
                click.echo("No resources found", err=True)
            for target in targets:
                try:
                    result = await _delete(client, target, policy, grace)
                except StatusError as exc:
                    if exc.code == 404 and ignore_not_found:
                        continue
                    problems.append(status_message(exc, "deleting" if target.source else None, target.source))
                    continue
                click.echo(f'{kind_label(target.resource)} "{target.name}" deleted')
                deleted.append(result)
            if wait:
                pending = [d for d in deleted if not d.gone]
                try:
                    async with asyncio.timeout(seconds):
                        while pending:
                            await wait_gone(client, pending[0])
                            pending.pop(0)
                except TimeoutError:
                    problems.extend(f"error: timed out waiting for the condition on "
                                    f"{d.target.resource.group_resource}/{d.target.name}" for d in pending)
        return problems

    problems = session.run(main)
    if problems:
        raise CliError("\n".join(problems))
