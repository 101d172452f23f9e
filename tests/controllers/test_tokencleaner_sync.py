"""The token cleaner against known caches, on a settable clock (sample-controller style)."""

from __future__ import annotations

import datetime

from objects import T0

from minik.api.tokens import bootstrap_secret
from minik.controllers.tokencleaner import TokenCleaner
from minik.testing.clock import FakeClock
from minik.testing.controllers import RecordingClient, StaticInformerFactory

START = datetime.datetime.fromtimestamp(T0, datetime.UTC)


def token(token_id: str, ttl_seconds: float | None, **changes: object) -> dict:
    ttl = datetime.timedelta(seconds=ttl_seconds) if ttl_seconds else None
    secret = bootstrap_secret(f"{token_id}.0123456789abcdef", "node", ttl, now=START)
    secret["metadata"].update(uid=f"uid-{token_id}", resourceVersion="7")
    secret.update(changes)
    return secret


class Harness:
    def __init__(self, *secrets: dict) -> None:
        self.client = RecordingClient(secrets)
        self.factory = StaticInformerFactory(self.client, {"secrets": list(secrets)})
        self.clock = FakeClock(T0)
        self.controller = TokenCleaner(self.client, self.factory, clock=self.clock)

    async def sync(self, name: str, namespace: str = "kube-system") -> None:
        await self.controller.sync(f"{namespace}/{name}")

    def deleted(self) -> list[str]:
        return [a.name for a in self.client.writes("delete")]


async def test_a_token_is_deleted_when_its_expiration_passes_and_not_before() -> None:
    h = Harness(token("abcdef", 3600))
    await h.sync("bootstrap-token-abcdef")
    assert h.deleted() == []
    h.clock.step(3599)
    assert len(h.controller.queue) == 0
    h.clock.step(2)
    assert len(h.controller.queue) == 1
    await h.sync("bootstrap-token-abcdef")
    assert h.deleted() == ["bootstrap-token-abcdef"]
    assert h.client.writes("delete")[0].options["preconditions"] == {"uid": "uid-abcdef", "resourceVersion": "7"}


async def test_a_token_without_expiration_stays() -> None:
    h = Harness(token("abcdef", None))
    await h.sync("bootstrap-token-abcdef")
    h.clock.step(10 ** 8)
    await h.sync("bootstrap-token-abcdef")
    assert h.deleted() == []


async def test_a_token_with_an_unreadable_expiration_counts_as_expired() -> None:
    secret = token("abcdef", 3600)
    secret["data"]["expiration"] = "bm90LWEtdGltZQ=="  # "not-a-time"
    h = Harness(secret)
    await h.sync("bootstrap-token-abcdef")
    assert h.deleted() == ["bootstrap-token-abcdef"]


async def test_secrets_of_other_types_or_namespaces_are_left_alone() -> None:
    opaque = token("abcdef", 1, type="Opaque")
    elsewhere = token("ghijkl", 1)
    elsewhere["metadata"]["namespace"] = "default"
    h = Harness(opaque, elsewhere)
    h.clock.step(60)
    await h.sync("bootstrap-token-abcdef")
    await h.sync("bootstrap-token-ghijkl", "default")
    assert h.deleted() == []
