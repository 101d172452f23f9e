"""The image of this host's Python with the Kubernetes client (minik.kubelet.runtimes.pythonimage): what goes in,
found from the client's metadata, and that it is built once per Python and client, then kept. Needs a Docker
engine (scripts/test provides one); the e2e tests run the client in it."""

from __future__ import annotations

import aiodocker

from minik.kubelet.runtimes.images import PYTHON_KUBERNETES_IMAGE
from minik.kubelet.runtimes.pythonimage import SOURCE_LABEL, distributions, ensure_python_image, fingerprint


def test_the_clients_requirements_are_followed_to_the_end_without_extras_not_asked_for() -> None:
    names = {d.metadata["Name"].lower().replace("_", "-") for d in distributions()}
    assert {"kubernetes", "urllib3", "certifi", "python-dateutil", "pyyaml", "requests", "websocket-client",
            "requests-oauthlib", "oauthlib", "idna", "charset-normalizer"} <= names
    assert "google-auth" not in names  # the client's google-auth extra
    assert "minik" not in names and "pytest" not in names


async def test_the_image_is_built_once_for_this_python_and_client_then_kept() -> None:
    async with aiodocker.Docker() as docker:
        await ensure_python_image(docker)
        image = await docker.images.inspect(PYTHON_KUBERNETES_IMAGE)
        assert image["Config"]["Labels"][SOURCE_LABEL] == fingerprint(distributions())
        assert await ensure_python_image(docker) is False
        assert (await docker.images.inspect(PYTHON_KUBERNETES_IMAGE))["Id"] == image["Id"]
