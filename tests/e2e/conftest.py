"""The `kubectl` fixture: real kubectl pointed at the test's cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubectl_helpers import Kubectl


@pytest.fixture
async def kubectl(cluster, tmp_path: Path) -> Kubectl:  # type: ignore[no-untyped-def]
    return Kubectl(cluster, tmp_path / "kubectl")
