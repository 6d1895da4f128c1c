"""`tau run status`: fetch a run's objects, interpret them into phases, present them.

Performs I/O only in `fetch` and `watch`; everything else is pure. Usage (what the CLI does)::

    from datetime import UTC, datetime

    from rich.console import Console

    from tau.status import document, fetch, interpret, text

    snapshot = fetch.fetch(api_client, "research", "train")      # constant number of API calls
    status = interpret.interpret(snapshot, datetime.now(UTC))    # pure
    print(document.to_json(status))                              # -o json (RunStatus document)
    text.render(status, Console())                               # human view (rich)
    exit_code = 1 if status.state == "failed" else 0

`classify.classify(snapshot)` gives the failure reason the retry loop and resume check against
`resilience.retry_on`; `watch.watch(...)` redraws on Kubernetes watch events (`--watch`).
"""
