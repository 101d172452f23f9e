"""The service account tokens in pods' projected volumes: requested through the TokenRequest API with the node's
credentials, bound to the pod (its name and uid: the token dies with the pod), written into the volume, and
renewed before they expire, as Kubernetes' kubelet token manager does.

A token is renewed once 80 % of its lifetime has passed, or 24 hours after it was issued, whichever comes first
(``refresh_after``). Each pod with tokens has one renewal task, which sleeps until the earliest of its tokens is
due, asks for a new one and writes it in place (a new file renamed over the old one, so a container that has the
volume's directory mounted sees the new token). The task ends with the pod (``forget``) or the kubelet
(``stop``). A kubelet that starts again finds the tokens a previous one wrote (``adopt``): their ``iat`` and
``exp`` claims say when they are due.
"""

from __future__ import annotations

import asyncio
import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import structlog

from minik.aio import start_task, stop_task
from minik.aio.clock import SYSTEM_CLOCK, Clock
from minik.api.errors import StatusError
from minik.client import Client

log = structlog.get_logger("minik.kubelet.tokens")

Obj = dict[str, Any]

#: the share of a token's lifetime after which the kubelet asks for a new one (Kubernetes' 80 %)
REFRESH_FRACTION = 0.8
#: no token goes unrenewed longer than this (Kubernetes' maxTTL: 24 h)
MAX_AGE_SECONDS = 24 * 3600
#: a projected token's lifetime when its source names none (the API's defaulting gives it already)
DEFAULT_EXPIRATION_SECONDS = 3600
#: how long a failed renewal waits before it tries again
RETRY_SECONDS = 10.0


def refresh_after(lifetime: float) -> float:
    """Seconds after a token was issued when it is renewed: at 80 % of its lifetime, at most 24 hours."""
    return min(lifetime * REFRESH_FRACTION, MAX_AGE_SECONDS)


@dataclass(frozen=True)
class Token:
    value: str
    issued: float
    """When it was obtained, on the manager's clock (its ``iat`` for one read back from a file)."""
    lifetime: float
    """Seconds it is valid for from ``issued``."""

    @property
    def refresh_at(self) -> float:
        return self.issued + refresh_after(self.lifetime)


def read_token(value: str) -> Token | None:
    """A token as read back from a file: its ``iat`` and ``exp`` claims (unverified: this is the node's own file,
    and only the renewal time is taken from it), or None for something that is not a JWT with both."""
    try:
        payload = value.strip().split(".")[1]
        claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        issued, expires = float(claims["iat"]), float(claims["exp"])
    except (IndexError, KeyError, TypeError, ValueError, orjson.JSONDecodeError):
        return None
    return Token(value.strip(), issued, expires - issued) if expires > issued else None


def write_atomically(path: Path, content: str, mode: int) -> None:
    """Write ``path`` as a new file renamed over the old one, in the same directory: whoever reads it (a container
    with the directory bind-mounted) sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(content)
    os.chmod(temporary, mode)
    temporary.replace(path)


@dataclass(frozen=True)
class TokenFile:
    """One serviceAccountToken source of a pod's projected volume, as written on this node."""

    volume: str
    path: Path
    mode: int
    audience: str
    expiration_seconds: int


@dataclass
class _Held:
    """A token file of a pod, the token in it, and when to renew it (its refresh time, or a retry's)."""

    target: TokenFile
    token: Token
    due: float


class TokenManager:
    """Requests, caches and renews the projected tokens of one kubelet's pods."""

    def __init__(self, client: Client, clock: Clock = SYSTEM_CLOCK,
                 retry_seconds: float = RETRY_SECONDS) -> None:
        self.client = client
        self.clock = clock
        self.retry_seconds = retry_seconds
        #: pod uid -> the pod and its token files (by path)
        self._pods: dict[str, tuple[Obj, dict[Path, _Held]]] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._changed: dict[str, asyncio.Event] = {}

    async def request(self, pod: Obj, target: TokenFile) -> Token:
        """A new token of the pod's service account, bound to the pod (TokenRequest API)."""
        meta = pod["metadata"]
        spec: Obj = {"expirationSeconds": target.expiration_seconds,
                     "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": meta["name"], "uid": meta["uid"]}}
        if target.audience:
            spec["audiences"] = [target.audience]
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        issued = self.clock.now()
        answer = await self.client.create_token(str(account), meta["namespace"], spec)
        lifetime = (answer.get("spec") or {}).get("expirationSeconds") or target.expiration_seconds
        return Token(str((answer.get("status") or {}).get("token") or ""), issued, float(lifetime))

    def _held(self, uid: str) -> dict[Path, _Held]:
        entry = self._pods.get(uid)
        return entry[1] if entry is not None else {}

    async def write(self, pod: Obj, target: TokenFile) -> None:
        """Put a token in ``target.path`` (the one held while it is not due, else a new one) and keep it renewed."""
        held = self._held(pod["metadata"]["uid"]).get(target.path)
        if held is not None and held.target == target and self.clock.now() < held.token.refresh_at:
            token = held.token
        else:
            token = await self.request(pod, target)
        write_atomically(target.path, token.value, target.mode)
        self._hold(pod, target, token)

    def adopt(self, pod: Obj, targets: list[TokenFile]) -> None:
        """Renew the tokens a previous kubelet wrote for a pod that still runs (nothing for files not written yet:
        writing them starts their renewal)."""
        held = self._held(pod["metadata"]["uid"])
        for target in targets:
            if target.path in held:
                continue
            try:
                token = read_token(target.path.read_text())
            except OSError:
                continue
            if token is not None:
                self._hold(pod, target, token)

    def tracks(self, uid: str) -> bool:
        return uid in self._pods

    def refresh_at(self, uid: str) -> float | None:
        """When the pod's next token is due (None: it holds none)."""
        return min((held.due for held in self._held(uid).values()), default=None)

    def _hold(self, pod: Obj, target: TokenFile, token: Token) -> None:
        uid = pod["metadata"]["uid"]
        _, files = self._pods.setdefault(uid, (pod, {}))
        files[target.path] = _Held(target, token, token.refresh_at)
        self._changed.setdefault(uid, asyncio.Event()).set()
        if uid not in self._tasks:
            self._tasks[uid] = start_task(self._renew(uid, self._changed[uid]), f"token renewal {uid}")

    async def _renew(self, uid: str, changed: asyncio.Event) -> None:
        """Renew the pod's tokens as they fall due, for as long as the pod is held."""
        while True:
            changed.clear()
            due = self.refresh_at(uid)
            wait = None if due is None else due - self.clock.now()
            if wait is not None and wait <= 0:
                await self._renew_due(uid)
                continue
            # sleep until the next token is due, or until a token is written (which may be due sooner)
            waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(changed.wait())]
            if wait is not None:
                waits.append(asyncio.ensure_future(self.clock.sleep(wait)))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
                await asyncio.gather(*waits, return_exceptions=True)

    async def _renew_due(self, uid: str) -> None:
        pod, files = self._pods[uid]
        now = self.clock.now()
        for held in list(files.values()):
            if held.due > now:
                continue
            try:
                fresh = await self.request(pod, held.target)
            except Exception as exc:  # noqa: BLE001 - refused (the pod is going) or unreachable: try again later
                log.warning("token renewal failed; retrying", pod=_key(pod), volume=held.target.volume,
                            error=exc.message if isinstance(exc, StatusError) else f"{type(exc).__name__}: {exc}",
                            retry_seconds=self.retry_seconds)
                held.due = now + self.retry_seconds
                continue
            write_atomically(held.target.path, fresh.value, held.target.mode)
            held.token, held.due = fresh, fresh.refresh_at
            log.info("token renewed", pod=_key(pod), volume=held.target.volume, lifetime=fresh.lifetime)

    async def forget(self, uid: str) -> None:
        """Stop renewing the pod's tokens (it was deleted or has finished)."""
        self._pods.pop(uid, None)
        self._changed.pop(uid, None)
        await stop_task(self._tasks.pop(uid, None))

    async def stop(self) -> None:
        for uid in list(self._tasks):
            await self.forget(uid)


def _key(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
