"""The cluster's shared join token: made once by `minik up` in its data directory (a file of mode 0600), accepted
by the API server as a bearer token, presented by `minik node join`, and by the API server to the kubelets'
endpoints. A small, replaceable piece: the security work replaces it with expiring bootstrap tokens, a pinned CA
and per-node credentials.

The token has the shape of a Kubernetes bootstrap token (``[a-z0-9]{6}.[a-z0-9]{16}``)."""

from __future__ import annotations

import os
import re
import secrets
import string
from pathlib import Path

TOKEN_FILE = "join-token"
TOKEN_PATTERN = re.compile(r"^[a-z0-9]{6}\.[a-z0-9]{16}$")
_ALPHABET = string.ascii_lowercase + string.digits


def new_token() -> str:
    def part(length: int) -> str:
        return "".join(secrets.choice(_ALPHABET) for _ in range(length))
    return f"{part(6)}.{part(16)}"


def token_path(data_dir: Path) -> Path:
    return data_dir / TOKEN_FILE


def ensure_token(data_dir: Path) -> str:
    """The cluster's token, made on first use; its file is readable by its owner only."""
    path = token_path(data_dir)
    try:
        return read_token(path)
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    token = new_token()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return read_token(path)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(token + "\n")
    return token


def read_token(path: Path) -> str:
    token = path.read_text().strip()
    if not token:
        raise FileNotFoundError(f"{path} is empty")
    return token
