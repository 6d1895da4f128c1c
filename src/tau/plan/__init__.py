"""The plan stage: resolve a validated config and a preset catalog into a frozen Plan."""
