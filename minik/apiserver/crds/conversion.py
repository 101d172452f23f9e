"""Custom resources between versions: objects are stored in the CRD's storage version and answered in the
version of the request, as Kubernetes' CR handler converts them.

- Conversion ``None`` rewrites ``apiVersion`` and nothing else.
- Conversion ``Webhook`` sends the objects to the CRD's webhook as a ``ConversionReview`` (apiextensions.k8s.io/v1)
  and takes what it answers, after checking it kept each object's identity (uid, name, namespace; only labels and
  annotations of the metadata may change). A webhook that cannot be reached or answers badly fails the request
  with a 500 InternalError naming the webhook, as Kubernetes does.

Objects read from storage are defaulted by the request version's schema (defaults added to a CRD after objects
were stored show up on read, not only on their next write).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import orjson
import structlog

from minik.api.errors import StatusError
from minik.api.kinds.customresources import CustomResourceVersion
from minik.api.registry import ResourceType
from minik.apiserver.admission.base import ObjectReader
from minik.apiserver.admission.webhook.client import WebhookClient
from minik.apiserver.admission.webhook.config import parse_webhook
from minik.apiserver.admission.webhook.review import CallError
from minik.apiserver.rest import new_uid
from minik.store import Record

log = structlog.get_logger("minik.apiserver.crds")

Obj = dict[str, Any]

#: what a conversion webhook gets to answer (Kubernetes' default)
WEBHOOK_TIMEOUT_SECONDS = 30.0


class WebhookCaller(Protocol):
    """Posts a review to a webhook's clientConfig (url or service, caBundle) and returns the decoded answer."""

    async def post(self, client_config: Obj, body: bytes, timeout: float) -> Any: ...


class ConversionFailed(Exception):
    """The webhook could not be called or answered something unusable (the message says which)."""


class Converter:
    """Converts the objects of one CRD to a version."""

    def __init__(self, info: CustomResourceVersion, webhooks: WebhookCaller | None) -> None:
        self.info = info
        self.webhooks = webhooks

    def _gvk(self) -> str:
        return f"{self.info.group}/{self.info.version}, Kind={self.info.kind}"

    async def convert(self, objects: list[Obj], version: str) -> list[Obj]:
        """``objects`` in ``version`` (those already in it are returned as they are, the rest converted in place
        for conversion None, replaced for a webhook)."""
        wanted = f"{self.info.group}/{version}"
        todo = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != wanted]
        if not todo:
            return objects
        if self.info.conversion.get("strategy") != "Webhook":
            for i in todo:
                objects[i]["apiVersion"] = wanted
            return objects
        try:
            converted = await self._webhook([objects[i] for i in todo], wanted)
        except ConversionFailed as exc:
            raise StatusError(500, "InternalError", f"Internal error occurred: conversion webhook for "
                                                    f"{self._gvk()} failed: {exc}",
                              {"causes": [{"message": f"conversion webhook for {self._gvk()} failed: {exc}"}]}
                              ) from None
        out = list(objects)
        for i, obj in zip(todo, converted):
            out[i] = obj
        return out

    async def _webhook(self, objects: list[Obj], wanted: str) -> list[Obj]:
        webhook = self.info.conversion.get("webhook") or {}
        client_config = webhook.get("clientConfig") or {}
        versions = webhook.get("conversionReviewVersions") or ["v1"]
        if "v1" not in versions:
            raise ConversionFailed(f"no supported conversion review versions in {versions} (minik speaks v1)")
        if self.webhooks is None:
            raise ConversionFailed("conversion webhooks are not available on this server")
        uid = new_uid()
        review = {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
                  "request": {"uid": uid, "desiredAPIVersion": wanted, "objects": objects}}
        answer = await self.webhooks.post(client_config, orjson.dumps(review), WEBHOOK_TIMEOUT_SECONDS)
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict):
            raise ConversionFailed("the webhook answered no ConversionReview response")
        if response.get("uid") != uid:
            raise ConversionFailed(f"expected response uid {uid!r}, got {response.get('uid')!r}")
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise ConversionFailed(f"conversion request failed: {result.get('message') or result}")
        converted = response.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != len(objects):
            raise ConversionFailed(f"returned {len(converted) if isinstance(converted, list) else 0} objects, "
                                   f"expected {len(objects)}")
        for before, after in zip(objects, converted):
            _check_converted(before, after, wanted)
        return converted


def _check_converted(before: Obj, after: Any, wanted: str) -> None:
    """A converted object keeps its identity: only labels and annotations of its metadata may change."""
    if not isinstance(after, dict):
        raise ConversionFailed("a converted object is not an object")
    if after.get("apiVersion") != wanted:
        raise ConversionFailed(f"invalid converted object: expected apiVersion {wanted!r}, got "
                               f"{after.get('apiVersion')!r}")
    if after.get("kind") != before.get("kind"):
        raise ConversionFailed(f"invalid converted object: expected kind {before.get('kind')!r}, got "
                               f"{after.get('kind')!r}")
    old_meta, new_meta = before.get("metadata") or {}, after.get("metadata") or {}
    if not isinstance(new_meta, dict):
        raise ConversionFailed("invalid converted object: metadata is not an object")
    for key in set(old_meta) | set(new_meta):
        if key in ("labels", "annotations"):
            continue
        if old_meta.get(key) != new_meta.get(key):
            raise ConversionFailed(f"invalid metadata of converted object: must not change metadata.{key}")


class CustomResourceCodec:
    """The ObjectCodec of one served version: stored objects in, objects of this version out, and back."""

    def __init__(self, resource: ResourceType, converter: Converter) -> None:
        self.resource = resource
        self.info: CustomResourceVersion = resource.custom
        self.converter = converter
        #: nothing to do on reads: one stored version, this one, and no defaults in the schema
        self.identity = not self.info.converts and not self.info.defaults

    def _default(self, obj: Obj) -> Obj:
        if self.info.defaults and self.info.compiled is not None:
            self.info.compiled.default(obj)
        return obj

    async def decode(self, record: Record) -> Obj:
        obj = record.object()
        if self.identity:
            return obj
        converted = (await self.converter.convert([obj], self.info.version))[0]
        return self._default(converted)

    async def encode(self, obj: Obj) -> Obj:
        if self.info.storage_version == self.info.version:
            return obj  # stored as it is (the store writes its own JSON of it)
        copied: Obj = orjson.loads(orjson.dumps(obj))
        return (await self.converter.convert([copied], self.info.storage_version))[0]

    async def present(self, raws: list[bytes], written: bool = False) -> list[bytes]:
        """``written``: objects this request just stored, defaulted already (only converted)."""
        if not raws or self.identity or (written and not self.info.converts):
            return raws
        objects = [orjson.loads(raw) for raw in raws]
        converted = await self.converter.convert(objects, self.info.version)
        if written:
            return [orjson.dumps(obj) for obj in converted]
        return [orjson.dumps(self._default(obj)) for obj in converted]

    async def watch(self, lines: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """A watch stream (chunks of event lines) with every event's object in this version."""
        try:
            async for chunk in lines:
                out = []
                for line in chunk.splitlines():
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(event.get("object"), dict):
                        raw = orjson.dumps(event["object"])
                        try:
                            converted = (await self.present([raw]))[0]
                        except StatusError as exc:
                            out.append(b'{"type":"ERROR","object":' + orjson.dumps(exc.to_status()) + b"}\n")
                            continue
                        out.append(b'{"type":"' + event["type"].encode() + b'","object":' + converted + b"}\n")
                    else:
                        out.append(line + b"\n")
                if out:
                    yield b"".join(out)
        finally:
            aclose = getattr(lines, "aclose", None)
            if aclose is not None:
                await aclose()


# -- calling a webhook ----------------------------------------------------------------------------------------------
class HttpWebhooks:
    """Calls conversion webhooks with the admission webhooks' client (one session; a clientConfig's url, or a
    service through a ready endpoint of its port, checked against the caBundle as ``NAME.NAMESPACE.svc``), its
    failures worded as Kubernetes' Go client words them."""

    def __init__(self, reader: ObjectReader) -> None:
        self.client = WebhookClient(reader)

    async def post(self, client_config: Obj, body: bytes, timeout: float) -> Any:
        hook = parse_webhook("conversion", 0, {"name": "conversion", "clientConfig": client_config,
                                               "timeoutSeconds": int(timeout)})
        try:
            payload = await self.client.post(hook, body)
        except CallError as exc:
            raise ConversionFailed(exc.reason.removeprefix("failed to call webhook: ")) from None
        try:
            return orjson.loads(payload)
        except orjson.JSONDecodeError:
            raise ConversionFailed("the webhook's answer is not JSON") from None

    async def close(self) -> None:
        await self.client.close()
