"""tau: turn a checked-in workload intent (tau.yaml) into Kubernetes Jobs or KubeRay RayJobs.

The package is layered as load → validate → resolve → render → dump (pure) and
submit → observe (I/O). Nothing here imports the Kubernetes client at import time,
so offline commands stay fast.
"""

__version__ = "0.1.0"
