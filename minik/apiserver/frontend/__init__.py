"""The API server's front end: HTTP worker processes in front of the one process that owns the store.

Python runs one thread of Python code at a time, so a single process spends one core on everything: HTTP parsing
and writing (about half of a create's cost), the request pipeline and the commit. Kubernetes splits this work
between kube-apiserver and etcd; minik splits it where it is cheapest to cut: the workers speak HTTP to clients
(aiohttp), and pass each request over a socket pair as a frame (``wire``) to the API server process, which runs
it through the same ``ApiServer.handle`` as every other request (``backend``) and sends the answer back. So there
is still one store, one pipeline, one watch cache and one in-process client, and every read sees every
acknowledged write, whichever process took the connection.

- ``supervisor``: the API server's side: its own listener, starting, handing over to and restarting workers;
- ``worker`` (a process of its own), ``upstream`` (forwarding and streaming) and ``relay`` (WebSockets, which go
  to the API server's private Unix listener as they are);
- ``wire``: the frames.
"""

from minik.apiserver.frontend.supervisor import Frontend, FrontendSettings, listen

__all__ = ["Frontend", "FrontendSettings", "listen"]
