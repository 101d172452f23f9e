"""authentication.k8s.io and authorization.k8s.io: the review kinds, questions the API answers and never stores
(minik.apiserver.auth.reviews answers them). Their strategy only says where they live."""

from __future__ import annotations

from minik.api.strategy import Strategy

__all__ = ["ClusterReviewStrategy", "NamespacedReviewStrategy"]


class ClusterReviewStrategy(Strategy):
    namespace_scoped = False


class NamespacedReviewStrategy(Strategy):
    pass
