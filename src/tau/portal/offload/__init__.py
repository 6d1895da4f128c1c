"""`taugrid-portal experiment offload metrics`: the metrics collector of an offloading run.

It tails the run's `metrics.history` files (`tail`), spools each new row to `--out`
(`spool`), delivers the spool into the experiment store every interval (`delivery`), records
what was delivered (`checkpoint`), adds the pod's CPU, memory and GPU use (`system`, `gpu`) and,
when the workload's wrapper writes the completion sentinel, the terminal `tau/run_status`
marker (`marker`). `collector` runs the passes; `options` turns flags and environment into them.
"""
