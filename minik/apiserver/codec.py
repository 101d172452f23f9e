"""Decoding request bodies safely and encoding responses.

Bodies are size-checked before parsing (413), decoded by content type (415 for unknown types), and YAML is read
with a loader that refuses aliases and deep nesting, so no document can blow up memory or time
(CVE-2019-11253). Kubernetes protobuf bodies (what kubectl's typed clients send) are decoded by
minik.apiserver.protobuf into the same JSON form. Anything malformed is a 400 BadRequest Status, never an exception.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from minik.api.errors import StatusError, bad_request, unsupported_media_type
from minik.apiserver import protobuf
from minik.jsonbytes import without_surrogates

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_DEPTH = 100

JSON = "application/json"
YAML = "application/yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PROTOBUF = protobuf.MEDIA_TYPE

_YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", APPLY_PATCH)
_JSON_TYPES = ("application/json", "", "*/*", MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH)


class _SafeLoader(yaml.SafeLoader):
    """SafeLoader without anchors/aliases and with a nesting limit."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "YAML aliases are not allowed", event.start_mark)
        event = self.peek_event()
        if getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(None, None, "YAML anchors are not allowed", event.start_mark)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nesting deeper than {MAX_DEPTH} levels",
                                              event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


# timestamps stay strings, as Kubernetes reads them
_SafeLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def media_type(content_type: str | None) -> str:
    """``application/json`` from ``application/json; charset=utf-8``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def load_yaml(text: str) -> Any:
    """Parse one YAML document safely; raises ValueError with a readable message."""
    try:
        return yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - the loader is a hardened SafeLoader
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("the document is nested too deeply") from None


def load_yaml_all(text: str) -> list[Any]:
    """Parse every document of a multi-document YAML stream safely (empty documents dropped)."""
    try:
        return [d for d in yaml.load_all(text, Loader=_SafeLoader) if d is not None]  # noqa: S506
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        raise ValueError("the document is nested too deeply") from None


def decode(body: bytes, content_type: str | None) -> Any:
    """Decode a request body by its content type. StatusError 415 or 400 when it cannot be read."""
    kind = media_type(content_type)
    if len(body) > MAX_BODY_BYTES:
        raise StatusError(413, "RequestEntityTooLarge", "the request body is too large")
    if kind in _YAML_TYPES:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise bad_request("the body is not valid UTF-8") from None
        try:
            value = load_yaml(text)
        except ValueError as exc:
            raise bad_request(f"error converting YAML to JSON: {exc}") from None
        return without_surrogates(value) if "\\u" in text or "\\U" in text else value
    if kind in _JSON_TYPES:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
    if kind == PROTOBUF:
        try:
            return protobuf.decode(body)
        except protobuf.ProtobufError as exc:
            raise bad_request(f"the protobuf body could not be decoded: {exc}") from None
    raise unsupported_media_type(kind)


def decode_object(body: bytes, content_type: str | None) -> dict[str, Any]:
    """Decode a body that must be a JSON object (a Kubernetes object)."""
    value = decode(body, content_type)
    if not isinstance(value, dict):
        raise bad_request("the body of the request must be a JSON object, not " + type(value).__name__)
    return value


def encode(value: Any) -> bytes:
    return orjson.dumps(value)
