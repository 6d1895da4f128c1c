"""The plan stage: a validated config and a preset catalog → a frozen Plan (`resolve`), and
`tau serve deploy` flags → a ServeSpec (`service`, with the pod parts both share).
"""
