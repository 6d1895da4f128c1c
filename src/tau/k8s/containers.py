"""Names of the containers tau renders and later reads by name. Pure data.

One spelling for the renderer (`tau.render.rayjob`) and the readers of logs (`tau.runs`), so
the two cannot disagree about which container holds the Ray driver's log.
"""

from __future__ import annotations

#: The Ray head's sidecar that tails the driver's log (and keeps a copy on the data claim).
DRIVER_LOG_CONTAINER = "ray-driver-log-offload"
#: The head's Ray container, whose log says why Ray did not start when there is no driver log.
RAY_HEAD_CONTAINER = "ray-head"
#: The sidecar's env var naming where on the data claim it keeps the driver's log.
DRIVER_LOG_COPY_ENV = "TAU_DRIVER_LOG_COPY"
