"""The token cleaner in a running cluster: an expired bootstrap token's Secret goes, a lasting one stays."""

from __future__ import annotations

import datetime

from controller_helpers import eventually

from minik.api.tokens import bootstrap_secret
from minik.client import Client


async def test_an_expired_join_token_is_deleted_and_a_lasting_one_stays(api: Client) -> None:
    short = bootstrap_secret("short1.0123456789abcdef", "node", datetime.timedelta(seconds=1))
    lasting = bootstrap_secret("long01.0123456789abcdef", "node", datetime.timedelta(hours=1))
    await api.create("secrets", short, "kube-system")
    await api.create("secrets", lasting, "kube-system")

    async def cleaned() -> bool:
        names = {s["metadata"]["name"] for s in (await api.list("secrets", "kube-system"))["items"]}
        assert "bootstrap-token-long01" in names
        return "bootstrap-token-short1" not in names
    await eventually(cleaned, timeout=15)
