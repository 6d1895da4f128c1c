"""The dataset and model registry: immutable JSON records, movable aliases, pluggable storage.

Pure (package marker). The records live as plain JSON files with the reference layout
(``dataset-registry/``, ``model-registry/``, ``checkpoints/finetunes/``) under a root that is
either a local directory (``file://DIR``) or the registry PVC mounted at ``/data`` (``pvc``).
Modules: ``records`` (names, references, record building and validation), ``digest`` (streaming
hashing), ``layout`` (paths), ``backend`` (storage protocol and the file backend), ``datasets``
and ``models`` (the registry operations), ``format`` (table and JSON text).
"""
