"""The Kubernetes vocabulary on the ground floor: keys, kinds, name grammars, quantities, time.

Pure, and imported by every layer above; it imports nothing of tau's.
"""
