"""Images built without a registry: a busybox image from the host's static busybox (what `docker import` of a
root file system does), the pause image the Docker runtime's sandboxes run, and an image of this host's Python
with the Kubernetes client (minik.kubelet.runtimes.pythonimage).

``scripts/build_images.py`` builds them for the tests, examples and manifests; the Docker runtime builds the pause
image itself when it is missing and cannot be pulled.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import BinaryIO

import aiodocker

#: the tags the busybox image gets: the same manifests then work against Docker Hub elsewhere
BUSYBOX_TAGS = ("busybox:latest", "busybox:1.36", "busybox:1.35")
PAUSE_IMAGE = "minik/pause:3.10"
#: this host's Python with the official Kubernetes client (minik.kubelet.runtimes.pythonimage), for tests of
#: in-cluster clients
PYTHON_KUBERNETES_IMAGE = "minik/python-kubernetes:test"
BUSYBOX_PATHS = ("/usr/bin/busybox", "/bin/busybox")


def find_busybox() -> Path:
    for candidate in BUSYBOX_PATHS:
        path = Path(candidate)
        if path.exists():
            return path
    found = shutil.which("busybox")
    if found:
        return Path(found)
    raise FileNotFoundError("no busybox binary (install busybox-static: apt-get install busybox-static)")


class RootFs:
    """A tar of a root file system being written: files, links and directories (each parent directory once)."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.now = time.time()
        self._dirs: set[str] = set()

    def dir(self, name: str, mode: int = 0o755) -> None:
        name = name.strip("/")
        if not name or name in self._dirs:
            return
        parent = name.rpartition("/")[0]
        if parent:
            self.dir(parent)
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, self.now
        self.tar.addfile(info)
        self._dirs.add(name)

    def data(self, name: str, data: bytes, mode: int = 0o644) -> None:
        name = name.strip("/")
        self.dir(name.rpartition("/")[0])
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, self.now
        self.tar.addfile(info, io.BytesIO(data))

    def copy(self, name: str, source: Path) -> None:
        """A host file (its content, mode and modification time, through any symlink) at ``name``."""
        name = name.strip("/")
        self.dir(name.rpartition("/")[0])
        stat = source.stat()
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = stat.st_size, stat.st_mode & 0o7777, stat.st_mtime
        with source.open("rb") as content:
            self.tar.addfile(info, content)

    def symlink(self, name: str, target: str) -> None:
        name = name.strip("/")
        self.dir(name.rpartition("/")[0])
        link = tarfile.TarInfo(name)
        link.type, link.linkname, link.mode, link.mtime = tarfile.SYMTYPE, target, 0o777, self.now
        self.tar.addfile(link)


def add_busybox(root: RootFs, busybox: Path | None = None) -> None:
    """/bin/busybox, a link per applet, /etc/passwd and the usual directories."""
    binary = busybox or find_busybox()
    applets = subprocess.run([str(binary), "--list"], capture_output=True, text=True, check=True).stdout.split()
    for name in ("bin", "etc", "dev", "proc", "sys", "root", "home", "var", "var/www", "usr", "usr/bin"):
        root.dir(name)
    root.dir("tmp", 0o1777)
    root.data("bin/busybox", binary.read_bytes(), 0o755)
    for applet in applets:
        if applet != "busybox":
            root.symlink(f"bin/{applet}", "busybox")
    root.data("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")
    root.data("etc/group", b"root:x:0:\nnobody:x:65534:\n")
    root.data("etc/hosts", b"127.0.0.1\tlocalhost\n")


def busybox_rootfs(busybox: Path | None = None) -> bytes:
    """A tar of a minimal root file system: busybox (``add_busybox``) and nothing else."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        add_busybox(RootFs(tar), busybox)
    return out.getvalue()


async def import_rootfs(docker: aiodocker.Docker, rootfs: bytes | BinaryIO, reference: str,
                        *changes: str) -> None:
    """`docker import --change CHANGE...` through the API: POST /images/create?fromSrc=- with the tar (bytes, or
    an open file) as the body. The engine reads the changes as the lines of one Dockerfile."""
    repo, _, tag = reference.rpartition(":")
    params = {"fromSrc": "-", "repo": repo, "tag": tag, "changes": "\n".join(changes)}
    async with docker._query("images/create", "POST", params=params, data=rootfs,  # noqa: SLF001
                             headers={"Content-Type": "application/x-tar"}) as response:
        body = await response.read()
    for line in body.splitlines():
        message = json.loads(line) if line.strip() else {}
        if message.get("error"):
            raise aiodocker.DockerError(500, {"message": message["error"]})  # type: ignore[arg-type]  # aiodocker takes the reply's JSON


async def build_pause(docker: aiodocker.Docker, rootfs: bytes | None = None) -> None:
    await import_rootfs(docker, rootfs or busybox_rootfs(), PAUSE_IMAGE,
                        'CMD ["/bin/sleep", "2147483647"]')


async def build_all(docker: aiodocker.Docker, python: bool = True) -> list[str]:
    """Build busybox (every tag of BUSYBOX_TAGS) and pause, and (``python``) the Python image with the Kubernetes
    client unless it is there already for this host's Python (minik.kubelet.runtimes.pythonimage); the
    references built."""
    rootfs = busybox_rootfs()
    first, *others = BUSYBOX_TAGS
    await import_rootfs(docker, rootfs, first, 'CMD ["sh"]')
    for reference in others:
        repo, _, tag = reference.rpartition(":")
        await docker.images.tag(first, repo, tag=tag)
    await build_pause(docker, rootfs)
    built = [*BUSYBOX_TAGS, PAUSE_IMAGE]
    if python:
        from minik.kubelet.runtimes.pythonimage import ensure_python_image

        if await ensure_python_image(docker):
            built.append(PYTHON_KUBERNETES_IMAGE)
    return built
