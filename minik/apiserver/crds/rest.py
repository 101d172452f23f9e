"""Writes of custom resources: the generic ones (``ResourceRest``) with the objects converted to and from the
storage version, and creates refused while the CRD is being deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minik.api.errors import StatusError
from minik.api.registry import ResourceType
from minik.apiserver.admission import Admission
from minik.apiserver.crds.conversion import Converter, CustomResourceCodec, WebhookCaller
from minik.apiserver.request import User
from minik.apiserver.rest import Obj, ResourceRest
from minik.store import Record, Store

if TYPE_CHECKING:
    from minik.apiserver.apply import FieldManager


def method_not_supported(resource: ResourceType, verb: str) -> StatusError:
    """Kubernetes' MethodNotSupported: ``create is not supported on resources of kind "widgets.example.com"``."""
    return StatusError(405, "MethodNotAllowed", f'{verb} is not supported on resources of kind '
                       f'"{resource.group_resource}"', {"group": resource.group, "kind": resource.plural})


class CustomResourceRest(ResourceRest):
    """Create, update, patch and delete for one served version of a custom resource."""

    def __init__(self, resource: ResourceType, store: Store, admission: Admission,
                 webhooks: WebhookCaller | None = None) -> None:
        super().__init__(resource, store, admission)
        self.codec = CustomResourceCodec(resource, Converter(resource.custom, webhooks))

    async def create(self, obj: Obj, namespace: str | None, user: User, dry_run: bool = False,
                     fields: FieldManager | None = None) -> Record | Obj:
        if self.resource.custom.terminating:
            raise method_not_supported(self.resource, "create")
        return await super().create(obj, namespace, user, dry_run, fields)
