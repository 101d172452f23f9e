"""Container runtimes behind one small interface (``base.Runtime``): fake (simulated), docker, process."""
