"""TauWorkspace readiness, the namespace and queue a workspace gives runs, and reports.

`readiness`, `target` and `report` are pure; `lookup` performs I/O.
"""
