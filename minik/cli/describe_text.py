"""The text layout of `minik describe`: ``Key:`` and value columns aligned as kubectl's tab writer aligns them,
and the parts every kind shares (the header with name, namespace, labels and annotations; timestamps; generic
rendering of any field)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from minik.api.registry import ResourceType
from minik.cli.apply import LAST_APPLIED
from minik.cli.output import align, parse_time

Obj = dict[str, Any]

NONE = "<none>"


class Writer:
    """Lines of tab-separated cells, indented by level (two spaces each); ``render`` aligns them as kubectl's
    describe output (padding 2). A line with a single cell (a section title) ends an alignment block."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    def line(self, level: int, *cells: Any) -> None:
        texts = [str(c) for c in cells] or [""]
        texts[0] = "  " * level + texts[0]
        self.rows.append(texts)

    def kv(self, level: int, key: str, value: Any) -> None:
        self.line(level, f"{key}:", NONE if value is None or value == "" and key != "IP" else value)

    def mapping(self, level: int, key: str, values: Mapping[str, Any] | None, sep: str = "=") -> None:
        """``Labels:  a=b`` with further pairs on their own lines, aligned under the first; ``<none>`` if empty."""
        items = sorted((values or {}).items())
        if not items:
            self.line(level, f"{key}:", NONE)
            return
        for i, (k, v) in enumerate(items):
            self.line(level, f"{key}:" if i == 0 else "", f"{k}{sep}{v}")

    def title(self, level: int, text: str) -> None:
        self.line(level, text)

    def blank(self) -> None:
        self.rows.append([""])

    def render(self) -> str:
        return "\n".join(align(self.rows, minwidth=0, padding=2)) + "\n"


# -- shared parts -----------------------------------------------------------------------------------------------
def timestamp(value: Any) -> str:
    """kubectl's describe timestamps: ``Mon, 02 Jan 2006 15:04:05 -0700`` in local time."""
    when = parse_time(value)
    if when is None:
        return NONE
    return when.astimezone().strftime("%a, %d %b %Y %H:%M:%S %z")


def header(w: Writer, obj: Obj, rt: ResourceType, *, created: bool = False) -> None:
    meta = obj.get("metadata") or {}
    w.kv(0, "Name", meta.get("name", ""))
    if rt.namespaced:
        w.kv(0, "Namespace", meta.get("namespace", ""))
    if created:
        w.kv(0, "CreationTimestamp", timestamp(meta.get("creationTimestamp")))
    labels_and_annotations(w, obj)


def labels_and_annotations(w: Writer, obj: Obj) -> None:
    """``Labels:`` and ``Annotations:`` (without kubectl's last-applied-configuration, as kubectl shows them)."""
    meta = obj.get("metadata") or {}
    w.mapping(0, "Labels", meta.get("labels"))
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    w.mapping(0, "Annotations", annotations, sep=": ")


def controlled_by(w: Writer, obj: Obj) -> None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            w.kv(0, "Controlled By", f"{ref.get('kind')}/{ref.get('name')}")


_ACRONYMS = {"api": "API", "ip": "IP", "ips": "IPs", "id": "ID", "uid": "UID", "url": "URL", "cidr": "CIDR",
             "cidrs": "CIDRs", "dns": "DNS", "tls": "TLS", "cpu": "CPU", "os": "OS", "tcp": "TCP", "udp": "UDP"}


def label_for(key: str) -> str:
    """A field name as a heading: ``restartPolicy`` -> ``Restart Policy``, ``podIP`` -> ``Pod IP``."""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+", key) or [key]
    return " ".join(_ACRONYMS.get(word.lower(), word[:1].upper() + word[1:]) for word in words)


def scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def generic(w: Writer, level: int, value: Any, key: str | None = None) -> None:
    """Any value as nested ``Key:  value`` lines: maps indent their fields, lists of maps their items."""
    if isinstance(value, dict):
        if key is not None:
            if not value:
                w.kv(level, key, NONE)
                return
            w.title(level, f"{key}:")
            level += 1
        for k, v in value.items():
            generic(w, level, v, label_for(k))
    elif isinstance(value, list):
        if not value:
            w.kv(level, key or "", NONE)
        elif all(not isinstance(v, (dict, list)) for v in value):
            w.kv(level, key or "", ", ".join(scalar(v) for v in value))
        else:
            w.title(level, f"{key}:")
            for item in value:
                generic(w, level + 1, item)
                w.title(level + 1, "")
            w.rows.pop()
    else:
        w.kv(level, key or "", scalar(value))
