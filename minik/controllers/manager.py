"""The controller manager: every controller in one component, sharing one set of informers, each with its own
event recorder; started after the informers have synced and stopped before them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from minik.client import Client
from minik.controllers.base import Clock, Controller, InformerFactory, Recorder

if TYPE_CHECKING:
    from minik.events import EventRecorder

log = structlog.get_logger("minik.controllers")


@dataclass(frozen=True)
class ControllerSettings:
    workers: int = 4
    """Workers per controller: how many keys of one kind sync at once."""

    enabled: Sequence[str] | None = None
    """Controller names to run (None: all of CONTROLLERS)."""

    clock: Clock = field(default_factory=Clock)
    """Where controllers read the time (tests pass a FakeClock)."""

    host: str | None = None
    """The host named as the source of the events the controllers record."""


ControllerFactory = Callable[[Client, InformerFactory, ControllerSettings, Recorder | None], Controller]


def _replicaset(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.replicaset import ReplicaSetController
    return ReplicaSetController(client, factory, s.workers, s.clock, r)


def _replicationcontroller(client: Client, factory: InformerFactory, s: ControllerSettings,
                           r: Recorder | None) -> Controller:
    from minik.controllers.replicaset import ReplicationControllerController
    return ReplicationControllerController(client, factory, s.workers, s.clock, r)


def _deployment(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.deployment import DeploymentController
    return DeploymentController(client, factory, s.workers, s.clock, r)


def _endpoints(client: Client, factory: InformerFactory, s: ControllerSettings, r: Recorder | None) -> Controller:
    from minik.controllers.endpoints import EndpointsController
    return EndpointsController(client, s.workers, services=factory.informer("services"),  # type: ignore[return-value]
                               pods=factory.informer("pods"), endpoints=factory.informer("endpoints"))


#: controller name -> factory; each controller's module adds its entry
CONTROLLERS: dict[str, ControllerFactory] = {
    "replicaset": _replicaset,
    "replicationcontroller": _replicationcontroller,
    "deployment": _deployment,
    "endpoints": _endpoints,
}


def _recorder(client: Client, name: str, host: str | None) -> "EventRecorder":
    from minik.events import EventRecorder

    return EventRecorder(client, f"{name}-controller", host)  # the source Kubernetes' controllers name


class ControllerManager:
    def __init__(self, client: Client, settings: ControllerSettings | None = None) -> None:
        self.client = client
        self.settings = settings or ControllerSettings()
        self.factory = InformerFactory(client)
        names = self.settings.enabled if self.settings.enabled is not None else list(CONTROLLERS)
        unknown = sorted(set(names) - set(CONTROLLERS))
        if unknown:
            raise ValueError(f"unknown controllers {unknown}: choose from {', '.join(CONTROLLERS)}")
        #: one recorder per controller, so each event names its controller as its source
        self.recorders = {name: _recorder(client, name, self.settings.host) for name in names}
        self.controllers: dict[str, Controller] = {
            name: CONTROLLERS[name](client, self.factory, self.settings, self.recorders[name]) for name in names}

    def __getitem__(self, name: str) -> Controller:
        return self.controllers[name]

    async def start(self) -> None:
        for recorder in self.recorders.values():
            await recorder.start()
        await self.factory.start()
        for controller in self.controllers.values():
            await controller.start()
        log.info("controllers started", controllers=list(self.controllers))

    async def stop(self) -> None:
        for controller in reversed(list(self.controllers.values())):
            await controller.stop()
        await self.factory.stop()
        for recorder in self.recorders.values():
            await recorder.stop()
