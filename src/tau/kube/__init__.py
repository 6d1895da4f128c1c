"""Kubernetes API access: the only importer of `kubernetes`.

`client` builds the session's ApiClient; `resources` is the typed get/list/create/replace/patch/
delete (and pod log) by `ResourceType`; `streams` the watch streams; `errors` translates every
API and transport failure into one `ClusterError`; `lists`, `operator`, `workspaces` and
`access` are the bounded reads built on them. Importing this package does not import
`kubernetes`; each module imports it lazily, inside the functions that talk to the cluster, so
offline commands never pay for it.
"""
