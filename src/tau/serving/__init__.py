"""Model services (`tau serve`): the cluster verbs.

The pure stages live with the run's: flags → ServeSpec in `tau.plan.service`, ServeSpec →
documents in `tau.render.service` (reached through `tau.pipeline.service_documents`). Here,
`apply`, `observe` and `kube` perform I/O through `tau.kube`; `sources` reads the registry.
"""
