#!/usr/bin/env python3
"""Build the images the tests, examples and manifests need, with no registry: busybox (from the host's static
busybox, as `docker import` would) tagged busybox:latest and its version tags, minik's pause image, and
minik/python-kubernetes:test (this host's Python with the Kubernetes client, for the in-cluster client tests;
built again only when the host's Python or client changed)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import subprocess
import sys

import aiodocker

from minik.kubelet.runtimes.images import build_all


async def main() -> int:
    try:
        async with aiodocker.Docker() as docker:
            built = await build_all(docker)
    except importlib.metadata.PackageNotFoundError as exc:
        print(f"build_images: the Python image needs the {exc} package (pip install -e '.[test]')", file=sys.stderr)
        return 1
    except (aiodocker.DockerError, OSError, subprocess.SubprocessError) as exc:
        print(f"build_images: {exc}", file=sys.stderr)
        return 1
    print("build_images: built " + ", ".join(built))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
