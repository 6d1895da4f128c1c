"""`experiment stellar|plot|open|serve` and `portal serve`: Stellar and the web servers.

Performs I/O (the store, files, a listening socket, the browser opener, the cluster). Starlette,
uvicorn and Jinja2 are imported inside these commands only, never by `taugrid-portal --help`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from cyclopts import Parameter

from tau.errors import UsageError

CLI = "taugrid-portal experiment"
#: The project's one --context help text (tau.session.CONTEXT_HELP; not imported for --help).
CONTEXT_HELP = "kubectl context (default: $TAU_CONTEXT or current)."
StoreFlag = Annotated[str | None, Parameter(name="--store", help="experiment store root")]
Addr = Annotated[str, Parameter(name="--addr", help="listen address (loopback by default)")]
Metric = Annotated[str | None, Parameter(name="--metric", help="primary chart metric")]
AllowedHost = Annotated[
    tuple[str, ...],
    Parameter(
        name="--allowed-host",
        consume_multiple=False,
        negative=(),
        show_default=False,
        help="another Host header name to answer to (e.g. behind a proxy); repeatable",
    ),
]
DirectionFlag = Annotated[
    tuple[str, ...],
    Parameter(
        name="--direction",
        consume_multiple=False,
        negative=(),
        show_default=False,
        help="[METRIC=]max|min: which value is best (bare: the chart metric; default: what the "
        "metric recorded, else by name: loss, error, perplexity, ... min); repeatable",
    ),
]
IncludeFailed = Annotated[
    bool,
    Parameter(
        name="--include-failed",
        negative=(),
        help="count failed runs in group statistics, best run and ranking (marked either way)",
    ),
]
MaxRuns = Annotated[int, Parameter(name="--max-runs", help="runs per snapshot (≥ 0; 0 = 200)")]
STELLAR_OUTPUTS = ("html", "json", "tui")
PLOT_OUTPUTS = ("table", "json")


def _choice(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise UsageError(f"output must be one of: {', '.join(allowed)}")
    return value


def _source(store: str | None, *, serving: bool = False) -> Any:
    """The store's Stellar source; a missing or foreign store fails here with its message.

    A damaged index fails too, except for the servers (`serving`): they start anyway, say the
    one line with the fix, and answer 503 until the index is restored or rebuilt.
    """
    from tau.portal.errors import IndexDamaged
    from tau.portal.stellar.source import StoreSource
    from tau.portal.store.location import resolve_store
    from tau.portal.store.opener import open_location

    root = resolve_store(store)
    try:
        open_location(root).close()
    except IndexDamaged as exc:
        if not serving:
            raise
        print(f"warning: {exc.message}; serving 503 pages until it is fixed", file=sys.stderr)
        print(f"  hint: {exc.hint}", file=sys.stderr)
    return StoreSource(root)


def clock() -> datetime:
    """The snapshot's generation time (tests pin it)."""
    return datetime.now(UTC)


def _directions(values: tuple[str, ...]) -> dict[str, str]:
    from tau.portal.store.direction import parse_overrides

    return parse_overrides(values)


def _snapshot(
    source: Any,
    name: str,
    metric: str | None,
    max_runs: int,
    directions: dict[str, str] | None = None,
    include_failed: bool = False,
) -> dict[str, Any]:
    from tau.portal.errors import NotFound
    from tau.portal.stellar import snapshot

    try:
        evidence = source.evidence(name, max_runs=max_runs or 200)
    except LookupError:
        raise NotFound(
            name, hint=f"list what the store holds with `{CLI} list --kind groups`"
        ) from None
    return snapshot.build(
        evidence,
        now=clock(),
        metric=metric,
        directions=directions,
        include_failed=include_failed,
    )


def write_file(path: Path, text: str) -> int:
    """Write atomically with mode 0644; returns the byte count."""
    data = text.encode()
    path = path.expanduser()
    if path.parent and not path.parent.is_dir():
        raise UsageError(f"--out {path}: directory {path.parent} does not exist")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)


def stellar(
    name: str,
    /,
    *,
    store: StoreFlag = None,
    output: Annotated[str, Parameter(name=["--output", "-o"])] = "html",
    out: Annotated[Path | None, Parameter(name="--out", help="write to a file")] = None,
    metric: Metric = None,
    direction: DirectionFlag = (),
    include_failed: IncludeFailed = False,
    max_runs: MaxRuns = 200,
) -> int:
    """Render the Stellar dashboard of NAME (run group, run, then experiment): -o html|json|tui.

    `-o html` is one self-contained page (no external assets, no network when opened from disk).
    """
    from tau.portal.stellar import output as render

    kind = _choice(output, STELLAR_OUTPUTS)
    ways = _directions(direction)
    doc = _snapshot(_source(store), name, metric, max_runs, ways, include_failed)
    if kind == "json":
        text = render.as_json(doc)
    elif kind == "tui":
        text = render.as_tui(doc, color=out is None and render.wants_color(sys.stdout, os.environ))
    else:
        text = render.as_html(doc)
    if out is not None:
        size = write_file(out, text)
        print(f"wrote {out} ({size:,} bytes)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def plot(
    target: str,
    /,
    *,
    store: StoreFlag = None,
    metric: Metric = None,
    out: Annotated[Path | None, Parameter(name="--out", help="the SVG file to write")] = None,
    output: Annotated[str, Parameter(name=["--output", "-o"])] = "table",
    json_: Annotated[bool, Parameter(name="--json", negative=())] = False,
    include_failed: IncludeFailed = False,
) -> int:
    """Write a deterministic SVG chart of one metric (byte-identical for the same store)."""
    import json

    from tau.portal.stellar import output as render

    if out is None:
        raise UsageError("--out is required", hint="e.g. --out loss.svg")
    kind = "json" if json_ else _choice(output, PLOT_OUTPUTS)
    doc = _snapshot(_source(store), target, metric, 200, None, include_failed)
    size = write_file(out, render.plot_svg(doc))
    result = render.plot_result(doc, str(out), size)
    if kind == "json":
        print(json.dumps(result, indent=2))
    else:
        width = max(len(k) for k in result)
        print(f"{'FIELD'.ljust(width)}  VALUE")
        for key, value in result.items():
            shown = ", ".join(value) if isinstance(value, list) else value
            print(f"{key.ljust(width)}  {shown if shown != '' else '-'}")
    return 0


def _warm() -> None:
    """Load what the first page needs before the server says it is up: the metric reader's
    pyarrow modules and the compiled page templates (else the first browser waits for them,
    about half a second on a busy machine).
    """
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    from tau.portal.stellar import html

    html.compile_templates()


def _serve(
    app_factory: Any,
    addr: str,
    allowed_host: tuple[str, ...],
    announce: Any,
) -> int:
    from tau.portal.web import server

    requested = server.parse_addr(addr)
    sock = server.bind(requested)
    address = server.bound_address(sock, requested)
    warning = server.warning_for(address)
    if warning:
        print(warning, file=sys.stderr)
    app = app_factory(server.guard_for(address, allowed_host))
    _warm()
    announce(address)
    try:
        server.run(app, sock)
    finally:
        sock.close()
    return 0


def serve(
    *,
    store: StoreFlag = None,
    addr: Addr = "127.0.0.1:8080",
    default_target: Annotated[str | None, Parameter(name="--default-target")] = None,
    open_browser: Annotated[bool, Parameter(name="--open", negative=())] = False,
    metric: Metric = None,
    direction: DirectionFlag = (),
    include_failed: IncludeFailed = False,
    max_runs: MaxRuns = 200,
    allowed_host: AllowedHost = (),
) -> int:
    """Serve Stellar over HTTP (read-only; 127.0.0.1:8080 unless --addr)."""
    from tau.portal.web.app import create_app
    from tau.portal.web.stellar_routes import Stellar

    if max_runs < 0:
        raise UsageError("--max-runs must be >= 0")
    ways = _directions(direction)
    source = _source(store, serving=True)
    stellar_app = Stellar(
        source,
        default_target=default_target,
        metric=metric,
        max_runs=max_runs or 200,
        directions=ways,
        include_failed=include_failed,
    )

    def announce(address: Any) -> None:
        base = f"http://{address.shown_host}:{address.port}"
        if open_browser:
            url = base + (f"/stellar?target={_q(default_target)}" if default_target else "/")
            _open(url)
        print(
            f"serving {CLI} stellar at {base} (store={source.store_path})",
            file=sys.stderr,
            flush=True,
        )

    return _serve(
        lambda guard: create_app(guard=guard, stellar=stellar_app), addr, allowed_host, announce
    )


def open_(
    target: str,
    /,
    *,
    store: StoreFlag = None,
    addr: Addr = "127.0.0.1:8080",
    metric: Metric = None,
    direction: DirectionFlag = (),
    include_failed: IncludeFailed = False,
    no_browser: Annotated[bool, Parameter(name="--no-browser", negative=())] = False,
    max_runs: MaxRuns = 200,
    allowed_host: AllowedHost = (),
) -> int:
    """Serve Stellar for TARGET, print its URL and open the browser (unless --no-browser)."""
    from tau.portal.web.app import create_app
    from tau.portal.web.stellar_routes import Stellar

    ways = _directions(direction)
    source = _source(store)
    # an unknown target fails before binding
    doc = _snapshot(source, target, metric, max_runs, ways, include_failed)
    chosen = metric or doc["compare"].get("metric_name") or doc["chart"].get("metric_name") or ""
    stellar_app = Stellar(
        source,
        default_target=target,
        metric=metric,
        max_runs=max_runs or 200,
        directions=ways,
        include_failed=include_failed,
    )

    def announce(address: Any) -> None:
        base = f"http://{address.shown_host}:{address.port}"
        url = f"{base}/stellar?target={_q(target)}" + (f"&metric={_q(chosen)}" if chosen else "")
        if chosen and (ways.get(chosen) or ways.get("")):
            url += f"&direction={ways.get(chosen) or ways['']}"
        if include_failed:
            url += "&include_failed=1"
        if no_browser:
            print(url, flush=True)
        elif _open(url):
            print(f"opened {CLI} stellar at {url}", file=sys.stderr)
        print(
            f"serving {CLI} stellar at {base} (store={source.store_path})",
            file=sys.stderr,
            flush=True,
        )

    return _serve(
        lambda guard: create_app(guard=guard, stellar=stellar_app), addr, allowed_host, announce
    )


def portal_serve(
    *,
    store: StoreFlag = None,
    addr: Addr = "127.0.0.1:8080",
    context: Annotated[str | None, Parameter(name="--context", help=CONTEXT_HELP)] = None,
    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None,
    metric: Metric = None,
    max_runs: MaxRuns = 200,
    allowed_host: AllowedHost = (),
) -> int:
    """Serve the portal: live cluster boards at /portal, plus Stellar when a store is set."""
    from tau.errors import TauError
    from tau.portal.web.app import create_app
    from tau.portal.web.boards import KUSTO_WARNING
    from tau.portal.web.cluster import ClusterReader
    from tau.portal.web.stellar_routes import Stellar

    api_client, reason = None, ""
    try:
        api_client = _cluster_client(context)
    except TauError as exc:
        reason = exc.message if hasattr(exc, "message") else str(exc)
        print(
            f"warning: Jobs, Ray, Nodes, and Runs boards disabled (no Kubernetes access): {reason}",
            file=sys.stderr,
        )
    print(KUSTO_WARNING, file=sys.stderr)
    reader = ClusterReader(api_client, namespace=namespace, unavailable=reason)
    stellar_app = None
    if store or os.environ.get("TAU_EXP_STORE") or os.environ.get("TAU_EXP_STORE_ROOT"):
        stellar_app = Stellar(_source(store, serving=True), metric=metric, max_runs=max_runs or 200)

    def announce(address: Any) -> None:
        print(
            f"serving taugrid-portal portal at http://{address.shown_host}:{address.port}/portal",
            file=sys.stderr,
            flush=True,
        )

    return _serve(
        lambda guard: create_app(guard=guard, stellar=stellar_app, portal=reader),
        addr,
        allowed_host,
        announce,
    )


def _cluster_client(context: str | None) -> Any:
    """The API client of the project's one session (repository connection, or --context)."""
    from tau.session import connect

    return connect(context, lookup=False).api


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _open(url: str) -> bool:
    """The standard library's opener (xdg-open, open, or the Windows handler); not waited on."""
    import webbrowser

    try:
        return webbrowser.open(url, new=2)
    except webbrowser.Error:
        return False
