"""The node's side of local-path volumes (minik.controllers.localpath): the node owns its disk, so its kubelet
does the directory work that the provisioner, which may run on another machine, cannot.

- The directory of a volume is made when a pod mounts it (a hostPath of type DirectoryOrCreate, made mode 0777 as
  k3s's provisioner makes it, so that containers running as any user may write; ContainerConfigs does it).
- ``LocalVolumes.sweep`` removes the directories under the node's local-path root whose PersistentVolume no
  longer exists: a Released volume with reclaimPolicy Delete is deleted by the provisioner, and its data goes with
  the next sweep (every ``period`` seconds). A kubelet may only ``get`` volumes, so it asks about each directory
  by name rather than watching them. Retain keeps the volume, so its directory stays.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import structlog

from minik.api.errors import StatusError
from minik.client import Client, TransportError

log = structlog.get_logger("minik.kubelet.localvolumes")

#: the directory, under the kubelet's data directory, that holds its local-path volumes
LOCAL_PATH_DIR = "local-path"


class LocalVolumes:
    def __init__(self, client: Client, root: Path, period: float = 10.0) -> None:
        self.client = client
        self.root = root
        self.period = period

    def _directories(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [p for p in self.root.iterdir() if p.is_dir() and p.name.startswith("pvc-")]

    async def sweep(self) -> list[str]:
        """Remove the directories whose volume is gone; return their names."""
        removed: list[str] = []
        for directory in await asyncio.to_thread(self._directories):
            name = directory.name.split("_", 1)[0]
            try:
                await self.client.get("persistentvolumes", name)
                continue
            except StatusError as exc:
                if exc.code != 404:
                    log.info("cannot tell whether a local volume is gone", volume=name, error=exc.message)
                    continue
            except TransportError:
                return removed
            log.info("removing the directory of a deleted local volume", volume=name, path=str(directory))
            await asyncio.to_thread(shutil.rmtree, directory, True)
            removed.append(directory.name)
        return removed

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.sweep()
            except Exception:  # noqa: BLE001 - a failed sweep is retried at the next one
                log.exception("local volume sweep failed")
