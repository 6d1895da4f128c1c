"""Model services (`tau serve`): flags → ServeSpec → manifests, and the cluster verbs.

Pure (this package marker). `spec` and `render` are pure; `apply`, `observe` and `kube`
perform I/O through the official kubernetes client, imported lazily.
"""
