"""minik: a Kubernetes-style cluster in one Python asyncio process."""

__version__ = "0.1.0"
