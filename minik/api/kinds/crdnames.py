"""Which names a CustomResourceDefinition gets (Kubernetes' naming controller): the names of its spec that no other
resource of its group holds are accepted (``status.acceptedNames``), and the NamesAccepted condition says which
one conflicts (``PluralConflict``: ``"widgets" is already in use``) when one does.

Other CRDs of the group hold the names they were accepted; minik's built-in resources of the group hold theirs
too (Kubernetes keeps CRDs out of its own groups by the api-approved annotation instead; here a CRD in, say,
``rbac.authorization.k8s.io`` naming ``roles`` is told so rather than shadowed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minik.api.kinds.common import Obj, dict_at, list_at
from minik.api.registry import ResourceType

__all__ = ["Naming", "naming"]


@dataclass(frozen=True)
class Naming:
    """The accepted names and the NamesAccepted condition (status, reason, message)."""

    accepted: Obj
    status: str
    reason: str
    message: str


def _held(crds: Iterable[Obj], builtin: Iterable[ResourceType], group: str, self_name: str
          ) -> tuple[set[str], set[str]]:
    """The resource names (plural, singular, short names) and kinds (kind, list kind) others hold in ``group``."""
    resources: set[str] = set()
    kinds: set[str] = set()
    for crd in crds:
        if dict_at(crd, "metadata").get("name") == self_name or dict_at(crd, "spec").get("group") != group:
            continue
        accepted = dict_at(dict_at(crd, "status"), "acceptedNames")
        resources.update(str(n) for n in (accepted.get("plural"), accepted.get("singular")) if n)
        resources.update(str(n) for n in list_at(accepted, "shortNames") if n)
        kinds.update(str(n) for n in (accepted.get("kind"), accepted.get("listKind")) if n)
    for t in builtin:
        if t.group != group:
            continue
        resources.update(n for n in (t.plural, t.singular, *t.short_names) if n)
        kinds.update((t.kind, t.kind_list))
    return resources, kinds


def naming(crd: Obj, crds: Iterable[Obj], builtin: Iterable[ResourceType]) -> Naming:
    """The names ``crd`` gets, given every CRD (its own entry is skipped) and the built-in resource types."""
    spec = dict_at(crd, "spec")
    group = str(spec.get("group") or "")
    requested = dict_at(spec, "names")
    current = dict_at(dict_at(crd, "status"), "acceptedNames")
    resources, kinds = _held(crds, builtin, group, str(dict_at(crd, "metadata").get("name") or ""))
    accepted: Obj = dict(current)
    problem: tuple[str, str] | None = None

    def in_use(name: str) -> str:
        return f'"{name}" is already in use'

    for key, held, reason in (("plural", resources, "PluralConflict"), ("singular", resources, "SingularConflict")):
        wanted = requested.get(key)
        if wanted and wanted != current.get(key) and wanted in held:
            problem = (reason, in_use(str(wanted)))
        else:
            accepted[key] = wanted
    wanted_short = list_at(requested, "shortNames")
    if wanted_short != list_at(current, "shortNames"):
        mine = set(list_at(current, "shortNames"))
        clashes = [in_use(str(s)) for s in wanted_short if s not in mine and s in resources]
        if clashes:
            problem = ("ShortNamesConflict", clashes[0] if len(clashes) == 1 else f"[{', '.join(clashes)}]")
        else:
            accepted["shortNames"] = wanted_short
    for key, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
        wanted = requested.get(key)
        if wanted and wanted != current.get(key) and wanted in kinds:
            problem = (reason, in_use(str(wanted)))
        else:
            accepted[key] = wanted
    accepted["categories"] = list_at(requested, "categories")
    accepted = {k: val for k, val in accepted.items() if val not in (None, "", [])}
    if problem is None:
        return Naming(accepted, "True", "NoConflicts", "no conflicts found")
    return Naming(accepted, "False", problem[0], problem[1])
