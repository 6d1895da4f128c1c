"""Kubernetes API access: client factory, error translation, typed fetch helpers.

Importing this package does not import `kubernetes`; each module imports it lazily, inside the
functions that talk to the cluster, so offline commands never pay for it.
"""
