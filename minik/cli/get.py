"""`minik get`: list or fetch objects and print them as kubectl does.

Columns come from the server's Table (``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``): whatever it
defines, upper-cased, the priority-0 ones always and the others with ``-o wide``. A server that answers plain
JSON gets NAME and AGE, as kubectl's fallback. ``-o yaml|json`` print the object, or a ``List`` of them;
``-o name`` prints ``KIND/NAME``; ``-w`` keeps printing changes as they happen.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
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
from minik.cli.output import age, cell_text, to_json, to_yaml
from minik.client import Client

Obj = dict[str, Any]

PAGE_SIZE = 500


# -- what to get ------------------------------------------------------------------------------------------------
@dataclass
class Request:
    """One resource type to get, with the names asked for (none: list them all)."""

    resource: ResourceType
    names: list[str] = field(default_factory=list)


def parse_args(args: tuple[str, ...]) -> tuple[list[Request], bool]:
    """kubectl's argument forms: ``TYPE[,TYPE...] [NAME...]`` or ``TYPE/NAME...``; ``all`` is every type in the
    "all" category. Also returns whether the objects were named by ``TYPE/NAME``."""
    if not args:
        raise click.UsageError("you must specify the type of resource to get, e.g. minik get pods")
    if "/" in args[0]:
        requests: dict[str, Request] = {}
        for arg in args:
            kind, _, name = arg.partition("/")
            if not kind or not name or "/" in name:
                raise fail(f'there is no need to specify a resource type as a separate argument when passing '
                           f'arguments in resource/name form (e.g. \'minik get resource/<resource_name>\' instead '
                           f'of \'minik get resource resource/<resource_name>\'): "{arg}"')
            rt = resolve_kind(kind)
            requests.setdefault(rt.plural + "." + rt.group, Request(rt)).names.append(name)
        return list(requests.values()), True
    types: list[ResourceType] = []
    for kind in args[0].split(","):
        if kind == "all":
            types.extend(t for t in REGISTRY.types if "all" in t.categories)
        elif kind:
            types.append(resolve_kind(kind))
    names = list(args[1:])
    if any("/" in name for name in names):
        raise fail("arguments in resource/name form must have a single resource and name")
    if names and len(types) > 1:
        raise fail("names can only be given with a single resource type")
    unique = list(dict.fromkeys(types))
    return [Request(t, list(names)) for t in unique], False


# -- rows -------------------------------------------------------------------------------------------------------
@dataclass
class Column:
    name: str
    priority: int = 0
    format: str = ""


@dataclass
class Row:
    cells: list[Any]
    metadata: Obj


FALLBACK_COLUMNS = [Column("Name", 0, "name"), Column("Age")]


def _fallback_row(obj: Obj) -> Row:
    meta = obj.get("metadata") or {}
    return Row([meta.get("name", ""), age(meta.get("creationTimestamp"))], meta)


def rows_of(response: Obj, columns: list[Column] | None) -> tuple[list[Column], list[Row]]:
    """The columns and rows of a Table, or NAME/AGE rows of a plain list or object. ``columns`` are those seen
    before (a watch event's Table may leave them out)."""
    if response.get("kind") == "Table":
        definitions = response.get("columnDefinitions") or []
        if definitions:
            columns = [Column(str(d.get("name", "")), int(d.get("priority") or 0), str(d.get("format") or ""))
                       for d in definitions]
        rows = [Row(list(r.get("cells") or []), ((r.get("object") or {}).get("metadata") or {}))
                for r in response.get("rows") or []]
        return columns or FALLBACK_COLUMNS, rows
    if isinstance(response.get("items"), list):
        return FALLBACK_COLUMNS, [_fallback_row(i) for i in response["items"]]
    return FALLBACK_COLUMNS, [_fallback_row(response)]


class TablePrinter:
    """Prints rows under one header as kubectl's table printer does: columns padded to their widest cell plus
    three spaces (at least six wide); widths only grow, so rows printed later (a watch) stay aligned."""

    def __init__(self, resource: ResourceType, columns: list[Column], *, wide: bool, namespaces: bool,
                 show_kind: bool, show_labels: bool) -> None:
        self.resource = resource
        self.wide = wide
        self.namespaces = namespaces and resource.namespaced
        self.show_kind = show_kind
        self.show_labels = show_labels
        self.widths: list[int] = []
        self.header_printed = False
        self.columns = columns

    def _visible(self) -> list[int]:
        return [i for i, c in enumerate(self.columns) if self.wide or c.priority == 0]

    def header(self) -> list[str]:
        names = [self.columns[i].name.upper() for i in self._visible()]
        return (["NAMESPACE"] if self.namespaces else []) + names + (["LABELS"] if self.show_labels else [])

    def cells(self, row: Row) -> list[str]:
        out = []
        for i in self._visible():
            text = cell_text(row.cells[i] if i < len(row.cells) else None)
            if self.show_kind and self.columns[i].format == "name":
                text = f"{kind_label(self.resource)}/{text}"
            out.append(text)
        if self.namespaces:
            out.insert(0, str(row.metadata.get("namespace", "")))
        if self.show_labels:
            labels = row.metadata.get("labels") or {}
            out.append(",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>")
        return out

    def lines(self, rows: list[Row]) -> list[str]:
        table = [self.cells(r) for r in rows]
        if not self.header_printed:
            table.insert(0, self.header())
            self.header_printed = True
        for line in table:
            for i, cell in enumerate(line[:-1]):
                width = max(6, len(cell) + 3)
                if i < len(self.widths):
                    self.widths[i] = max(self.widths[i], width)
                else:
                    self.widths.append(width)
        return ["".join(cell.ljust(w) for cell, w in zip(line[:-1], self.widths)) + (line[-1] if line else "")
                for line in table]


# -- fetching ---------------------------------------------------------------------------------------------------
@dataclass
class Query:
    namespace: str | None
    label_selector: str | None
    field_selector: str | None


def _namespace(rt: ResourceType, query: Query) -> str | None:
    return query.namespace if rt.namespaced else None


async def _pages(client: Client, rt: ResourceType, query: Query) -> AsyncIterator[Obj]:
    token: str | None = None
    while True:
        page = await client.list(rt, _namespace(rt, query), label_selector=query.label_selector,
                                 field_selector=query.field_selector, limit=PAGE_SIZE, continue_=token)
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def _resource_version(response: Obj) -> str:
    meta = response.get("metadata") or {}
    if response.get("kind") == "Table" and not meta.get("resourceVersion"):
        rows = response.get("rows") or []
        if rows:
            meta = ((rows[-1].get("object") or {}).get("metadata") or {})
    return str(meta.get("resourceVersion") or "")


def _with_kind(obj: Obj, rt: ResourceType) -> Obj:
    if not obj.get("kind"):
        obj = {"apiVersion": rt.api_version, "kind": rt.kind, **obj}
    return obj


def _name_field_selector(query: Query, names: list[str]) -> str | None:
    if len(names) != 1:
        return query.field_selector
    by_name = f"metadata.name={names[0]}"
    return f"{query.field_selector},{by_name}" if query.field_selector else by_name


def _empty_message(requests: list[Request], query: Query, all_namespaces: bool) -> str:
    if all_namespaces or not any(r.resource.namespaced for r in requests):
        return "No resources found"
    return f"No resources found in {query.namespace} namespace."


@click.command()
@click.argument("args", nargs=-1, metavar="TYPE[,TYPE...] [NAME...] | TYPE/NAME...")
@namespace_option
@click.option("--all-namespaces", "-A", is_flag=True, help="List across all namespaces (adds a NAMESPACE column).")
@click.option("--selector", "-l", default=None, help="Label selector, e.g. app=web,tier!=db or 'env in (a,b)'.")
@click.option("--field-selector", default=None, help="Field selector, e.g. status.phase=Running.")
@click.option("--output", "-o", type=click.Choice(["wide", "yaml", "json", "name"]), default=None,
              help="Output format [default: a table].")
@click.option("--watch", "-w", is_flag=True, help="After listing, keep printing changes (Ctrl-C stops).")
@click.option("--show-labels", is_flag=True, help="Add a LABELS column.")
@target_options
def get(args: tuple[str, ...], namespace: str | None, all_namespaces: bool, selector: str | None,
        field_selector: str | None, output: str | None, watch: bool, show_labels: bool) -> None:
    """Display objects: `minik get pods`, `minik get deploy web -o yaml`, `minik get po,svc -A`,
    `minik get pod/web`, `minik get pods -l app=web -w`.

    Types accept plural, singular and short names and TYPE.GROUP (po, deploy, svc, ds, rs, rc, ns, no, ...).
    """
    requests, slashed = parse_args(args)
    if watch and (len(requests) > 1 or len(requests[0].names) > 1):
        raise fail("you may only watch a single resource type, or a single object")
    session = Session.current()
    query = Query(None if all_namespaces else session.namespace(namespace), selector, field_selector)
    if output in ("yaml", "json", "name"):
        problems = session.run(lambda: _print_objects(session, requests, query, output, watch, slashed))
    else:
        problems = session.run(lambda: _print_tables(session, requests, query, output == "wide", all_namespaces,
                                                     show_labels, watch))
    if problems:
        raise CliError("\n".join(problems))


async def _fetch(client: Client, request: Request, query: Query, problems: list[str]) -> list[Obj]:
    """The responses for one request: one per name (missing names are recorded as problems), or the pages."""
    rt = request.resource
    if not request.names:
        return [page async for page in _pages(client, rt, query)]
    responses = []
    for name in request.names:
        try:
            responses.append(await client.get(rt, name, _namespace(rt, query)))
        except StatusError as exc:
            if exc.code != 404:
                raise
            problems.append(status_message(exc))
    return responses


async def _print_tables(session: Session, requests: list[Request], query: Query, wide: bool, all_namespaces: bool,
                        show_labels: bool, watch: bool) -> list[str]:
    problems: list[str] = []
    printed_any = False
    async with session.table_client() as client:
        for request in requests:
            responses = await _fetch(client, request, query, problems)
            columns: list[Column] | None = None
            rows: list[Row] = []
            for response in responses:
                columns, page_rows = rows_of(response, columns)
                rows.extend(page_rows)
            printer = TablePrinter(request.resource, columns or FALLBACK_COLUMNS, wide=wide,
                                   namespaces=all_namespaces, show_kind=len(requests) > 1, show_labels=show_labels)
            if rows:
                if printed_any:
                    click.echo()
                for line in printer.lines(rows):
                    click.echo(line)
                printed_any = True
            if watch:
                if not rows and not problems:
                    click.echo(_empty_message(requests, query, all_namespaces), err=True)
                version = _resource_version(responses[-1]) if responses else ""
                await _watch_rows(client, request, query, version, printer)
    if not printed_any and not problems and not watch:
        click.echo(_empty_message(requests, query, all_namespaces), err=True)
    return problems


async def _watch(client: Client, request: Request, query: Query, version: str) -> AsyncIterator[tuple[str, Obj]]:
    """Every change after ``version``, re-watching from the last one seen when the server ends a watch."""
    rt = request.resource
    while True:
        async with client.watch(rt, _namespace(rt, query), resource_version=version or None, allow_bookmarks=True,
                                label_selector=query.label_selector,
                                field_selector=_name_field_selector(query, request.names)) as events:
            async for kind, obj in events:
                version = _resource_version(obj) or version
                if kind != "BOOKMARK":
                    yield kind, obj


async def _watch_rows(client: Client, request: Request, query: Query, version: str, printer: TablePrinter) -> None:
    columns: list[Column] | None = printer.columns
    async for _kind, obj in _watch(client, request, query, version):
        columns, rows = rows_of(obj, columns)
        if printer.columns is FALLBACK_COLUMNS and columns is not FALLBACK_COLUMNS:
            printer.columns = columns
        for line in printer.lines(rows):
            click.echo(line)


async def _print_objects(session: Session, requests: list[Request], query: Query, output: str, watch: bool,
                         slashed: bool) -> list[str]:
    problems: list[str] = []
    items: list[tuple[ResourceType, Obj]] = []
    version = ""
    async with session.client() as client:
        for request in requests:
            for response in await _fetch(client, request, query, problems):
                version = str((response.get("metadata") or {}).get("resourceVersion") or "")
                if isinstance(response.get("items"), list):
                    items.extend((request.resource, _with_kind(i, request.resource)) for i in response["items"])
                else:
                    items.append((request.resource, _with_kind(response, request.resource)))
        single = len(requests) == 1 and len(requests[0].names) == 1 and not slashed
        if output == "name":
            for rt, obj in items:
                click.echo(f"{kind_label(rt)}/{(obj.get('metadata') or {}).get('name', '')}")
            if not items and not problems:
                click.echo(_empty_message(requests, query, query.namespace is None), err=True)
        elif single and len(items) == 1:
            click.echo(_document(items[0][1], output), nl=False)
        elif items or not problems:
            listing = {"apiVersion": "v1", "items": [obj for _, obj in items], "kind": "List",
                       "metadata": {"resourceVersion": ""}}
            click.echo(_document(listing, output), nl=False)
        if watch:
            request = requests[0]
            async for _kind, obj in _watch(client, request, query, version):
                obj = _with_kind(obj, request.resource)
                if output == "name":
                    click.echo(f"{kind_label(request.resource)}/{(obj.get('metadata') or {}).get('name', '')}")
                else:
                    click.echo(("---\n" if output == "yaml" else "") + _document(obj, output), nl=False)
    return problems


def _document(obj: Obj, output: str) -> str:
    return to_yaml(obj) if output == "yaml" else to_json(obj) + "\n"
