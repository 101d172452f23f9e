"""Who may reach the cluster and what they may do: the cluster CA and certificates (``ca``), bearer tokens and
where they are kept (``tokens``), authentication (``authn``), authorization by role (``authz``), the credentials
a cluster is started with (``credentials``), the server side of a node join (``joinserver``), the client side
(``join``), the request lanes that keep an overloaded server answering (``overload``) and the kubelet endpoint's
TLS and access check (``kubelet``)."""
