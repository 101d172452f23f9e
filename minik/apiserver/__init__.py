"""The API server: the Kubernetes REST API over aiohttp, in front of the store."""
