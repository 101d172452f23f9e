"""An image of this host's own Python with the official Kubernetes client, built without a registry: what a pod
needs to run ``kubernetes.config.load_incluster_config()`` against minik (the tests of in-cluster clients).

The root file system holds busybox (a shell for ``exec``), the interpreter at /usr/local/bin/python3.X, the
shared libraries ``ldd`` lists for it and for every extension module taken (at the paths the host has them; the
interpreter's own library in /usr/lib, a directory the loader always searches), the standard library without its
tests, IDLE, Tk and ensurepip, and in /usr/local/lib/python3.X/site-packages the distributions the ``kubernetes``
package requires, found from its metadata (``importlib.metadata`` requirements, followed to the end). The
asyncio flavour of the client (``kubernetes/aio``, as big as the rest) is left out: the in-cluster client is the
synchronous one. Compiled files are taken as the host has them (optimisation level 0 only), so imports are fast.

The image is labelled with what it was built from (the interpreter, each distribution and its version, this
recipe's revision): ``ensure_python_image`` builds it only when no image of that label is there.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import aiodocker
import structlog
from packaging.requirements import Requirement

from minik.kubelet.runtimes.images import PYTHON_KUBERNETES_IMAGE, RootFs, add_busybox, import_rootfs

log = structlog.get_logger("minik.kubelet.images")

#: the distribution whose requirements are followed
ROOT_DISTRIBUTION = "kubernetes"
PREFIX = "usr/local"
#: a change here changes every fingerprint, so images of an older recipe are built again
RECIPE = "2"
SOURCE_LABEL = "minik.io/source"
#: standard library directories no client needs
STDLIB_LEFT_OUT = {"test", "tests", "idle_test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                   "site-packages", "__phello__"}
#: extension modules of the standard library left out: its own tests and Tk
DYNLOAD_LEFT_OUT = re.compile(r"^(_test|_xx|xx|_ctypes_test|_tkinter)")
#: within the distributions taken: the asyncio client
PACKAGE_LEFT_OUT = ("kubernetes/aio/",)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(root: str = ROOT_DISTRIBUTION) -> list[metadata.Distribution]:
    """``root`` and everything its requirements need, followed to the end: requirements whose markers hold here
    (extras not asked for are not taken), each distribution once."""
    found: dict[str, metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        if _normal(name) in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name == root:
                raise
            continue
        found[_normal(name)] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(found.values(), key=lambda d: _normal(d.metadata["Name"]))


def fingerprint(dists: list[metadata.Distribution]) -> str:
    """What the image is built from: the interpreter, the distributions and their versions, the recipe."""
    parts = [RECIPE, sys.version, os.path.realpath(sys.executable),
             *(f"{_normal(d.metadata['Name'])}=={d.version}" for d in dists)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _compiled_ok(path: Path) -> bool:
    """Plain .pyc files of this interpreter only (not -O ones, nor other versions')."""
    return path.suffix != ".pyc" or path.name.endswith(f".{sys.implementation.cache_tag}.pyc")


def _stdlib_files(stdlib: Path) -> Iterator[Path]:
    for directory, subdirs, files in os.walk(stdlib):
        here = Path(directory)
        subdirs[:] = sorted(d for d in subdirs if d not in STDLIB_LEFT_OUT and not d.startswith("config-"))
        for name in sorted(files):
            path = here / name
            if here.name == "lib-dynload" and DYNLOAD_LEFT_OUT.match(name):
                continue
            if _compiled_ok(path):
                yield path


def _package_files(dist: metadata.Distribution) -> Iterator[tuple[Path, str]]:
    """(host file, its path under site-packages) for the distribution's installed files that live in the
    directory it was installed into."""
    site = Path(str(dist.locate_file(""))).resolve()
    for entry in dist.files or []:
        path = Path(str(dist.locate_file(entry))).resolve()
        try:
            relative = path.relative_to(site).as_posix()
        except ValueError:
            continue  # a script in bin/, say
        if relative.startswith(PACKAGE_LEFT_OUT) or not path.is_file() or not _compiled_ok(path):
            continue
        yield path, relative


def shared_libraries(binaries: list[Path]) -> dict[str, Path]:
    """The libraries ``ldd`` lists for the binaries: the path the loader found each at -> the file."""
    libraries: dict[str, Path] = {}
    for chunk in range(0, len(binaries), 64):
        out = subprocess.run(["ldd", *map(str, binaries[chunk:chunk + 64])], capture_output=True, text=True).stdout
        for line in out.splitlines():
            found = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if found:
                libraries[found.group(1)] = Path(os.path.realpath(found.group(1)))
    return libraries


def _is_elf(path: Path) -> bool:
    with path.open("rb") as head:
        return head.read(4) == b"\x7fELF"


class Stripper:
    """Copies of binaries without their debugging sections (``strip --strip-debug``: a Python built from source,
    as pyenv builds it, keeps them, and they are most of its size), in a scratch directory; the binary itself
    where there is no ``strip``."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.strip = shutil.which("strip")
        self._count = 0

    def __call__(self, path: Path) -> Path:
        if self.strip is None or not _is_elf(path):
            return path
        self._count += 1
        out = self.scratch / f"{self._count}-{path.name}"
        done = subprocess.run([self.strip, "--strip-debug", "-o", str(out), str(path)], capture_output=True)
        if done.returncode != 0:
            return path
        os.utime(out, (path.stat().st_atime, path.stat().st_mtime))
        return out


def python_rootfs(out: Path) -> dict[str, int]:
    """Write the image's root file system as a tar to ``out``; what went in (files per part)."""
    dists = distributions()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    interpreter = Path(os.path.realpath(sys.executable))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    lib = f"{PREFIX}/lib/{version}"
    counts = {"stdlib": 0, "site-packages": 0, "libraries": 0}
    with tarfile.open(out, mode="w") as tar, tempfile.TemporaryDirectory(dir=out.parent) as scratch:
        stripped = Stripper(Path(scratch))
        root = RootFs(tar)
        add_busybox(root)
        root.copy(f"{PREFIX}/bin/{version}", stripped(interpreter))
        for alias in ("python3", "python"):
            root.symlink(f"{PREFIX}/bin/{alias}", version)
        extensions = [interpreter]
        for path in _stdlib_files(stdlib):
            root.copy(f"{lib}/{path.relative_to(stdlib).as_posix()}", stripped(path) if path.suffix == ".so" else path)
            counts["stdlib"] += 1
            if path.suffix == ".so":
                extensions.append(path)
        for dist in dists:
            for path, relative in _package_files(dist):
                root.copy(f"{lib}/site-packages/{relative}", stripped(path) if ".so" in path.suffixes else path)
                counts["site-packages"] += 1
                if ".so" in path.suffixes:
                    extensions.append(path)
        system = ("/lib/", "/lib64/", "/usr/lib/")
        for where, path in shared_libraries(extensions).items():
            # the interpreter's own library (in pyenv's tree, say) goes where the loader always looks
            root.copy(where if where.startswith(system) else f"usr/lib/{Path(where).name}", stripped(path))
            counts["libraries"] += 1
    return counts


async def _present(docker: aiodocker.Docker, reference: str) -> tuple[str, str] | None:
    """The id and source label of the image there, or None when there is none."""
    try:
        image = await docker.images.inspect(reference)
    except aiodocker.DockerError:
        return None
    return str(image.get("Id") or ""), str(((image.get("Config") or {}).get("Labels") or {}).get(SOURCE_LABEL) or "")


async def ensure_python_image(docker: aiodocker.Docker, reference: str = PYTHON_KUBERNETES_IMAGE) -> bool:
    """Build the image unless one built from the same Python and distributions is there (an older one is removed
    once replaced); whether it was built."""
    dists = await asyncio.to_thread(distributions)
    source = fingerprint(dists)
    present = await _present(docker, reference)
    if present is not None and present[1] == source:
        return False
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minik-python-image-") as scratch:
        tar = Path(scratch) / "rootfs.tar"
        counts = await asyncio.to_thread(python_rootfs, tar)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        with tar.open("rb") as body:
            await import_rootfs(docker, body, reference, f'CMD ["{version}"]',
                                f"ENV PATH=/{PREFIX}/bin:/usr/bin:/bin LANG=C.UTF-8",
                                f"LABEL {SOURCE_LABEL}={source}")
        size = tar.stat().st_size
    if present is not None:
        try:
            await docker.images.delete(present[0])
        except aiodocker.DockerError as exc:  # a container still uses it: it stays, untagged
            log.info("the replaced python image stays", image=present[0], error=str(exc))
    log.info("built the python image", image=reference, seconds=round(time.monotonic() - began, 1),
             megabytes=round(size / 1e6, 1), **counts)
    return True
