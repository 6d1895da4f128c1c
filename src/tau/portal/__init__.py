"""`taugrid-portal`: the experiment store (run evidence that outlives the pods) and its CLI.

The `tau` CLI never imports this package; it is the second console script's code.
"""
