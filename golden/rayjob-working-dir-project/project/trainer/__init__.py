"""The trainer package of the golden project."""
