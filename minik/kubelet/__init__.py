"""The node agent (kubelet): registers its node(s), runs the pods bound to them through a container runtime
(docker, process or fake) and reports their status. ``component.NodeComponent`` is what `minik up` runs."""
