"""`taugrid-portal`: the experiment store, Stellar and the portal.

The store is the authoritative packet of run evidence that outlives the pods. The `tau` CLI
never imports this package; it is the second console script's code.
"""
