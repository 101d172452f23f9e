"""The channel protocol of `kubectl exec` over WebSocket (v4.channel.k8s.io and v5.channel.k8s.io), shared by
the kubelet that serves it, the API server that relays it and the `minik exec` client.

Every binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the final Status (JSON), 4 a
terminal resize (JSON {"Width": W, "Height": H}); v5 adds 255, "close this channel" (``\\xff\\x00``: stdin ended).
"""

from __future__ import annotations

import json
from typing import Any

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
#: the subprotocols served, preferred first
PROTOCOLS = (V5, V4)

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255

Obj = dict[str, Any]


def frame(channel: int, data: bytes = b"") -> bytes:
    return bytes((channel,)) + data


def parse(message: bytes) -> tuple[int, bytes]:
    """(channel, payload); channel -1 for an empty message."""
    if not message:
        return -1, b""
    return message[0], message[1:]


def success() -> Obj:
    return {"metadata": {}, "status": "Success"}


def exit_failure(command: list[str], code: int) -> Obj:
    """The Status of a command that exited with ``code`` (kubectl prints "command terminated with exit code N"
    and exits with it)."""
    return {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: error executing command {command}, "
                       f"exit code {code}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def failure(message: str, reason: str = "InternalError") -> Obj:
    return {"metadata": {}, "status": "Failure", "reason": reason, "message": message}


def encode_status(status: Obj) -> bytes:
    return frame(ERROR, json.dumps(status).encode())


def exit_code(status: Obj) -> int:
    """What a client exits with for a final Status: 0, the command's code, or 1 for any other failure."""
    if status.get("status") == "Success":
        return 0
    if status.get("reason") == "NonZeroExitCode":
        for cause in (status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode" and str(cause.get("message", "")).isdigit():
                return int(cause["message"])
    return 1


def resize_message(width: int, height: int) -> bytes:
    return frame(RESIZE, json.dumps({"Width": width, "Height": height}).encode())


def parse_resize(payload: bytes) -> tuple[int, int] | None:
    try:
        size = json.loads(payload)
        return int(size.get("Width") or 0), int(size.get("Height") or 0)
    except (ValueError, TypeError, AttributeError):
        return None
