"""The credentials a cluster starts with: one CA for its whole life, a serving certificate for every name it is
reached at (issued again when those change), the same admin token after a restart, and plain HTTP refused
beyond loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from security_helpers import connect

from minik.cluster import COMPONENTS, Cluster, ClusterSettings
from minik.pki.ca import subject_names


def settings(data: Path, **extra: object) -> ClusterSettings:
    return ClusterSettings(data_dir=data, port=0, synchronous="NORMAL", disabled=frozenset(COMPONENTS),
                           **extra)  # type: ignore[arg-type]


def serving_names(data: Path) -> tuple[set[str], set[str]]:
    return subject_names(x509.load_pem_x509_certificate((data / "pki" / "apiserver.crt").read_bytes()))


async def test_a_restart_keeps_the_ca_and_the_admin_token_and_new_names_get_a_new_certificate(tmp_path: Path
                                                                                              ) -> None:
    data = tmp_path / "c"
    async with Cluster(settings(data)) as first:
        assert first.credentials is not None
        ca_hash, token = first.credentials.ca.hash, first.admin_token
    dns, ips = serving_names(data)
    assert {"localhost", "kubernetes", "kubernetes.default.svc.cluster.local"} <= dns
    assert {"127.0.0.1", "10.96.0.1"} <= ips
    assert "minik.example.org" not in dns
    async with Cluster(settings(data, tls_sans=("minik.example.org", "192.0.2.7"))) as second:
        assert second.credentials is not None
        assert (second.credentials.ca.hash, second.admin_token) == (ca_hash, token)
        async with connect(second, token) as admin:
            assert (await admin.get("namespaces", "default"))["metadata"]["name"] == "default"
    dns, ips = serving_names(data)
    assert "minik.example.org" in dns and "192.0.2.7" in ips


def test_plain_http_is_only_served_on_loopback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="plain HTTP is only served on a loopback address, not on 0.0.0.0"):
        settings(tmp_path, plain_http=True, bind="0.0.0.0")
    settings(tmp_path, plain_http=True, bind="127.0.0.1")
    settings(tmp_path, bind="0.0.0.0")  # HTTPS is fine anywhere


def test_minik_up_refuses_plain_http_beyond_loopback(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from minik.cli import cli

    result = CliRunner(env={"HOME": str(tmp_path)}).invoke(cli, ["up", "--plain-http", "--bind", "0.0.0.0"])
    assert result.exit_code == 1
    assert result.output.strip() == ("error: --plain-http serves plain HTTP and only on a loopback address, "
                                     "not on 0.0.0.0")


RESTART = """
import asyncio, sys
from pathlib import Path
from minik.cluster import COMPONENTS, Cluster, ClusterSettings

async def main() -> None:
    cluster = Cluster(ClusterSettings(data_dir=Path(sys.argv[1]), port=0, synchronous="NORMAL",
                                      disabled=frozenset(COMPONENTS)))
    await cluster.start()
    print("served", cluster.url.split(":")[0], "cryptography" in sys.modules)
    await cluster.stop()

asyncio.run(main())
"""


def test_a_restart_with_good_certificates_serves_https_without_importing_cryptography(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    runs = [subprocess.run([sys.executable, "-c", RESTART, str(tmp_path / "c")], capture_output=True, text=True,
                           timeout=60, env=env) for _ in range(2)]
    served = [[line.split()[1:] for line in run.stdout.splitlines() if line.startswith("served ")] for run in runs]
    assert served == [[["https", "True"]], [["https", "False"]]], runs[-1].stderr  # the first start makes the CA
