"""The e2e control plane: pinned Go binaries, their processes, and what a researcher needs."""
