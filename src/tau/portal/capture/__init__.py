"""Getting run evidence into the store: tracked runs, JSONL histories, cluster capture."""
