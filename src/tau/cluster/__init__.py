"""`tau cluster`: the platform operator's install, uninstall and validation flows.

Importing this package imports nothing heavy; the Helm driver runs `helm` as a subprocess and
every Kubernetes call goes through `tau.kube`, imported inside the functions that need it.
"""
