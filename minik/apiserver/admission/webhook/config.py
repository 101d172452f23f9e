"""The webhooks of the MutatingWebhookConfigurations or the ValidatingWebhookConfigurations, as admission calls
them: followed in the store (minik.store.follower), so a configuration written takes effect for the next request,
and parsed once per write (selectors, match conditions) rather than on every request.

Kubernetes calls the webhooks of the configurations in the order of the configurations' names, and within a
configuration in their order there."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import orjson
import structlog

from minik.api.kinds.admissionregistration import DEFAULT_SERVICE_PORT, DEFAULT_TIMEOUT_SECONDS
from minik.api.matchconditions import Condition, compile_conditions
from minik.api.selectors import LabelSelector, selector_from_dict
from minik.store import Event, EventType, Record, Store
from minik.store.follower import Follower

log = structlog.get_logger("minik.admission.webhook")

Obj = dict[str, Any]

MUTATING_PREFIX = "/admissionregistration.k8s.io/mutatingwebhookconfigurations/"
VALIDATING_PREFIX = "/admissionregistration.k8s.io/validatingwebhookconfigurations/"


@dataclass(frozen=True)
class ServiceRef:
    namespace: str
    name: str
    port: int
    path: str


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration, ready to match and call."""

    #: ``CONFIG/WEBHOOK``, unique: what reinvocation remembers a webhook by
    key: str
    name: str
    configuration: str
    rules: tuple[Obj, ...]
    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    #: why a selector could not be parsed (the webhook then fails as its failurePolicy says)
    selector_problem: str
    conditions: tuple[Condition, ...]
    failure_policy: str
    match_policy: str
    side_effects: str
    timeout_seconds: int
    reinvocation_policy: str
    url: str | None
    service: ServiceRef | None
    #: PEM certificates the webhook's serving certificate must chain to (the system's CAs when empty)
    ca_bundle: bytes
    review_versions: tuple[str, ...]

    @property
    def fails_open(self) -> bool:
        return self.failure_policy == "Ignore"


def _selector(raw: Any) -> LabelSelector | None:
    """None for an empty selector (it matches everything); ValueError for one that cannot be parsed."""
    if not raw:
        return None
    return selector_from_dict(raw)


def _ca_bundle(raw: Any) -> bytes:
    if not isinstance(raw, str) or not raw:
        return b""
    try:
        return base64.b64decode(raw)
    except (binascii.Error, ValueError):
        return b""


def parse_webhook(configuration: str, index: int, raw: Obj) -> Webhook:
    name = str(raw.get("name") or "")
    problem = ""
    try:
        namespace_selector = _selector(raw.get("namespaceSelector"))
        object_selector = _selector(raw.get("objectSelector"))
    except ValueError as exc:
        namespace_selector = object_selector = None
        problem = str(exc)
    client: Obj = raw["clientConfig"] if isinstance(raw.get("clientConfig"), dict) else {}
    service_raw = client.get("service")
    service = None
    if isinstance(service_raw, dict):
        service = ServiceRef(str(service_raw.get("namespace") or ""), str(service_raw.get("name") or ""),
                             int(service_raw.get("port") or DEFAULT_SERVICE_PORT), str(service_raw.get("path") or ""))
    url = client.get("url") if isinstance(client.get("url"), str) else None
    rules = tuple(r for r in raw.get("rules") or [] if isinstance(r, dict))
    versions = tuple(str(s) for s in raw.get("admissionReviewVersions") or [])
    return Webhook(f"{configuration}/{index}/{name}", name, configuration, rules, namespace_selector, object_selector,
                   problem, compile_conditions(raw.get("matchConditions")), str(raw.get("failurePolicy") or "Fail"),
                   str(raw.get("matchPolicy") or "Equivalent"), str(raw.get("sideEffects") or "Unknown"),
                   int(raw.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS),
                   str(raw.get("reinvocationPolicy") or "Never"), url, service, _ca_bundle(client.get("caBundle")),
                   versions)


def parse_configuration(raw: bytes) -> tuple[str, tuple[Webhook, ...]]:
    obj = orjson.loads(raw)
    name = str((obj.get("metadata") or {}).get("name") or "")
    hooks = []
    for i, hook in enumerate(obj.get("webhooks") or []):
        if not isinstance(hook, dict):
            continue
        try:
            hooks.append(parse_webhook(name, i, hook))
        except (TypeError, ValueError) as exc:  # validation keeps these out; an old object may still hold one
            log.warning("webhook left out", configuration=name, webhook=hook.get("name"), error=str(exc))
    return name, tuple(hooks)


class WebhookSource:
    """The current webhooks of one kind of configuration, in the order Kubernetes calls them."""

    def __init__(self, store: Store, prefix: str) -> None:
        self._configurations: dict[str, tuple[str, tuple[Webhook, ...]]] = {}
        self.webhooks: tuple[Webhook, ...] = ()
        self._follower = Follower(store, prefix, self._load, self._apply)

    def start(self) -> None:
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    def _load(self, records: list[Record]) -> None:
        self._configurations = {record.key: parse_configuration(record.raw) for record in records}
        self._changed()

    def _apply(self, events: list[Event]) -> None:
        for event in events:
            if event.type is EventType.DELETED:
                self._configurations.pop(event.key, None)
            else:
                self._configurations[event.key] = parse_configuration(event.raw)
        self._changed()

    def _changed(self) -> None:
        ordered = sorted(self._configurations.values(), key=lambda item: item[0])
        self.webhooks = tuple(hook for _, hooks in ordered for hook in hooks)
