"""`taugrid-portal`: the experiment store, Stellar and the portal."""
