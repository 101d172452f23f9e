"""A cluster (tests/conftest.py) and a real HTTPS webhook server beside it, its certificate signed by a test CA."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from webhook_server import WebhookServer

from minik.pki.ca import CertificateAuthority


@pytest.fixture(scope="session")
def test_ca() -> CertificateAuthority:
    return CertificateAuthority.create("webhook-test-ca")


@pytest.fixture
async def webhook(test_ca: CertificateAuthority) -> AsyncIterator[WebhookServer]:
    server = WebhookServer(test_ca)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
