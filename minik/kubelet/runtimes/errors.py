"""The one error a runtime raises (kept apart so that every runtime module can import it)."""

from __future__ import annotations


class RuntimeFailure(Exception):
    """A runtime operation failed; ``reason`` is the Kubernetes waiting reason to show
    (ErrImagePull, CreateContainerConfigError, CreateContainerError, RunContainerError...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
