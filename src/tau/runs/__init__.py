"""The run lifecycle verbs against a cluster: list, get, logs, cancel.

Performs I/O through an official `kubernetes.client.ApiClient` passed in; the pure parts
(status mapping, ages, table layout) sit beside them and are tested on plain objects.
"""
