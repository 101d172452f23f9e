"""What a restart needs to know about DATA_DIR/pki without reading a certificate: for each certificate minik
issued, a small JSON file beside it (``NAME.json``) with the names it covers, when it expires and a digest of the
CA certificate that signed it, written whenever the certificate was issued or checked.

With it, a cluster that restarts on a data directory whose certificates are still good loads them as files
(``ssl`` takes PEM) and never imports ``cryptography`` (about 50 ms) before it serves: only the first start, a
change of names, a new CA or a certificate near its end goes the slow way (``minik.pki.ca``). The files are
a cache: a missing, stale or unreadable one only means the slow way.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

#: a certificate with less time than this left is issued again (the same as minik.pki.ca.RENEW_BEFORE)
RENEW_BEFORE_SECONDS = 30 * 86400


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def remember(directory: Path, name: str, names: tuple[str, ...], not_after: float, ca_hash: str) -> None:
    """Record that NAME.crt covers ``names`` until ``not_after`` (epoch seconds), signed by the CA whose public key
    hashes to ``ca_hash``, as DATA_DIR/pki/ca.crt is now."""
    record = {"names": sorted(set(names)), "notAfter": not_after, "caDigest": digest(directory / "ca.crt"),
              "caHash": ca_hash}
    path = directory / f"{name}.json"
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(record))
    os.replace(temporary, path)  # no fsync: losing it costs one slow start, nothing more


def fresh(directory: Path, name: str, names: tuple[str, ...]) -> str | None:
    """The CA's hash when NAME.crt and NAME.key exist and, by the record, still cover ``names``, are not near
    their end and were signed by the current CA; else None (check them the slow way)."""
    try:
        record = json.loads((directory / f"{name}.json").read_text())
        good = (isinstance(record, dict) and set(names) <= set(record.get("names") or ())
                and float(record.get("notAfter") or 0) - time.time() > RENEW_BEFORE_SECONDS
                and record.get("caDigest") == digest(directory / "ca.crt")
                and (directory / f"{name}.crt").is_file() and (directory / f"{name}.key").is_file())
    except (OSError, ValueError, TypeError):
        return None
    ca_hash = record.get("caHash")
    return ca_hash if good and isinstance(ca_hash, str) else None
