"""Images built without a registry: a busybox image from the host's static busybox (what `docker import` of a
root file system does), and the pause image the Docker runtime's sandboxes run.

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

import aiodocker

#: the tags the busybox image gets: the same manifests then work against Docker Hub elsewhere
BUSYBOX_TAGS = ("busybox:latest", "busybox:1.36", "busybox:1.35")
PAUSE_IMAGE = "minik/pause:3.10"
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


def busybox_rootfs(busybox: Path | None = None) -> bytes:
    """A tar of a minimal root file system: /bin/busybox, a link per applet, /etc/passwd and the usual dirs."""
    binary = busybox or find_busybox()
    applets = subprocess.run([str(binary), "--list"], capture_output=True, text=True, check=True).stdout.split()
    out = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=out, mode="w") as tar:
        def add_dir(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, now
            tar.addfile(info)

        def add_file(name: str, data: bytes, mode: int = 0o644) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, now
            tar.addfile(info, io.BytesIO(data))

        for name in ("bin", "etc", "dev", "proc", "sys", "root", "home", "var", "var/www", "usr", "usr/bin"):
            add_dir(name)
        add_dir("tmp", 0o1777)
        add_file("bin/busybox", binary.read_bytes(), 0o755)
        for applet in applets:
            if applet == "busybox":
                continue
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname, link.mode, link.mtime = tarfile.SYMTYPE, "busybox", 0o777, now
            tar.addfile(link)
        add_file("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")
        add_file("etc/group", b"root:x:0:\nnobody:x:65534:\n")
        add_file("etc/hosts", b"127.0.0.1\tlocalhost\n")
    return out.getvalue()


async def import_rootfs(docker: aiodocker.Docker, rootfs: bytes, reference: str, change: str) -> None:
    """`docker import --change CHANGE` through the API: POST /images/create?fromSrc=- with the tar as the body."""
    repo, _, tag = reference.rpartition(":")
    params = {"fromSrc": "-", "repo": repo, "tag": tag, "changes": change}
    async with docker._query("images/create", "POST", params=params, data=rootfs,  # noqa: SLF001
                             headers={"Content-Type": "application/x-tar"}) as response:
        body = await response.read()
    for line in body.splitlines():
        message = json.loads(line) if line.strip() else {}
        if message.get("error"):
            raise aiodocker.DockerError(500, {"message": message["error"]})


async def build_pause(docker: aiodocker.Docker, rootfs: bytes | None = None) -> None:
    await import_rootfs(docker, rootfs or busybox_rootfs(), PAUSE_IMAGE,
                        'CMD ["/bin/sleep", "2147483647"]')


async def build_all(docker: aiodocker.Docker) -> list[str]:
    """Build busybox (every tag of BUSYBOX_TAGS) and pause; the references built."""
    rootfs = busybox_rootfs()
    first, *others = BUSYBOX_TAGS
    await import_rootfs(docker, rootfs, first, 'CMD ["sh"]')
    for reference in others:
        repo, _, tag = reference.rpartition(":")
        await docker.images.tag(first, repo, tag=tag)
    await build_pause(docker, rootfs)
    return [*BUSYBOX_TAGS, PAUSE_IMAGE]
