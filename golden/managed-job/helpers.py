def train(manifest: str, smoke_pairs: int) -> None:
    print(f"training from {manifest} on {smoke_pairs or 'all'} pairs")
