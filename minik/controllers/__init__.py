"""The controllers that make minik declarative (Kubernetes' kube-controller-manager): base.py (informers ->
work queue -> workers -> sync), expectations.py, claims.py (ownership), one module per controller, and
manager.py, which runs them all as one component."""
