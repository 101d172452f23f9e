"""The TLS policy of every server minik runs: the API server and each kubelet's endpoint.

TLS 1.3, whose suites are all AEAD (AES-GCM, ChaCha20-Poly1305), and TLS 1.2 with ECDHE key exchange and AEAD
ciphers only: no CBC suites (their MAC-then-encrypt padding is what Lucky13 and POODLE-style oracles attack), no
static-RSA key exchange (no forward secrecy), no SHA-1 MACs. Anything older than TLS 1.2 is refused.
"""

from __future__ import annotations

import ssl
from pathlib import Path

#: the TLS 1.2 suites a minik server accepts (OpenSSL's names), in its order of preference; the RSA ones serve
#: an RSA certificate (minik's own certificates are ECDSA P-256)
TLS12_SUITES = (
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
)


def server_context(cert: Path, key: Path, client_ca_pem: bytes | None = None, *,
                   require_client_cert: bool = True) -> ssl.SSLContext:
    """A server context serving ``cert`` under minik's TLS policy. With ``client_ca_pem``, clients present a
    certificate that CA signed: every client (the kubelet's endpoint), or those who have one when
    ``require_client_cert`` is False (the API server, whose clients send a bearer token or a client
    certificate)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH,
                                         cadata=client_ca_pem.decode() if client_ca_pem is not None else None)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(":".join(TLS12_SUITES))  # TLS 1.2 and below; TLS 1.3 suites are all AEAD already
    if client_ca_pem is not None:
        context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    context.load_cert_chain(str(cert), str(key))
    return context
