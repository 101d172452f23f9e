"""`minik describe`: a readable description of objects, ending with their events, laid out as kubectl's.

The kind-specific parts are in describers.py and the shared layout in describe_text.py; this module has the
command and the Events table (the events whose involvedObject is the object: its name, namespace and uid).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.cli.common import CliError, Session, fail, namespace_option, resolve_kind, status_message, target_options
from minik.cli.describe_text import NONE, Writer
from minik.cli.describers import DESCRIBERS, describe_generic
from minik.cli.output import human_duration, parse_time
from minik.client import Client

Obj = dict[str, Any]


def events(w: Writer, items: list[Obj]) -> None:
    if not items:
        w.kv(0, "Events", NONE)
        return
    now = datetime.now(UTC)

    def when(event: Obj, *fields: str) -> datetime | None:
        for f in fields:
            parsed = parse_time(event.get(f) or (event.get("metadata") or {}).get(f))
            if parsed is not None:
                return parsed
        return None

    rows = []
    for event in items:
        first = when(event, "firstTimestamp", "eventTime", "creationTimestamp")
        last = when(event, "lastTimestamp", "eventTime", "firstTimestamp", "creationTimestamp")
        last_age = human_duration((now - last).total_seconds()) if last else "<unknown>"
        count = int(event.get("count") or (event.get("series") or {}).get("count") or 1)
        if count > 1 and first is not None:
            shown_age = f"{last_age} (x{count} over {human_duration((now - first).total_seconds())})"
        else:
            shown_age = last_age
        source = event.get("source") or {}
        origin = source.get("component") or event.get("reportingComponent") or ""
        host = source.get("host") or event.get("reportingInstance") or ""
        if host and host != origin:
            origin = f"{origin}, {host}" if origin else host
        rows.append((last or datetime.min.replace(tzinfo=UTC),
                     [event.get("type") or "", event.get("reason") or "", shown_age, origin,
                      str(event.get("message") or "").strip()]))
    rows.sort(key=lambda r: r[0])
    w.title(0, "Events:")
    w.line(1, "Type", "Reason", "Age", "From", "Message")
    w.line(1, "----", "------", "----", "----", "-------")
    for _, cells in rows:
        w.line(1, *cells)


async def object_events(client: Client, obj: Obj, rt: ResourceType) -> list[Obj]:
    """The events about ``obj``: those whose involvedObject has its name, namespace and uid."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") if rt.namespaced else None
    selector = (f"involvedObject.name={meta.get('name', '')},involvedObject.namespace={namespace or ''},"
                f"involvedObject.uid={meta.get('uid', '')}")
    listing = await client.list_all("events", namespace, field_selector=selector)
    return list(listing.get("items") or [])


# -- the command ------------------------------------------------------------------------------------------------
async def describe_object(client: Client, rt: ResourceType, obj: Obj) -> str:
    w = Writer()
    describer = DESCRIBERS.get(rt.kind, describe_generic)
    await describer(w, client, rt, obj)
    events(w, await object_events(client, obj, rt))
    return w.render()


@click.command()
@click.argument("kind", metavar="TYPE[/NAME]")
@click.argument("names", nargs=-1)
@namespace_option
@click.option("--selector", "-l", default=None, help="Describe the objects matching this label selector.")
@target_options
def describe(kind: str, names: tuple[str, ...], namespace: str | None, selector: str | None) -> None:
    """Show the details of objects and their events: `minik describe pod web`, `minik describe deploy/web`,
    `minik describe pods -l app=web` (without names: every object of the type in the namespace)."""
    if "/" in kind:
        kind, _, name = kind.partition("/")
        if names or not name:
            raise fail("there is no need to specify a resource type as a separate argument when passing "
                       "arguments in resource/name form")
        names = (name,)
    rt = resolve_kind(kind)
    session = Session.current()
    ns = session.namespace(namespace) if rt.namespaced else None

    async def main() -> list[str]:
        problems: list[str] = []
        objects: list[Obj] = []
        async with session.client() as client:
            if names:
                for name in names:
                    try:
                        objects.append(await client.get(rt, name, ns))
                    except StatusError as exc:
                        if exc.code != 404:
                            raise
                        problems.append(status_message(exc))
            else:
                listing = await client.list_all(rt, ns, label_selector=selector)
                objects = list(listing.get("items") or [])
                if not objects:
                    click.echo(f"No resources found in {ns} namespace." if ns else "No resources found", err=True)
            for i, obj in enumerate(objects):
                click.echo(("\n\n" if i else "") + await describe_object(client, rt, obj), nl=False)
        return problems

    problems = session.run(main)
    if problems:
        raise CliError("\n".join(problems))
