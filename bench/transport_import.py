"""What the lean session's HTTP library costs a command: `http.client` imported or not.

The lean session once framed HTTP/1.1 itself to save this import. Paired runs of a fresh
interpreter that imports what the session needs anyway (ssl, socket, threading) with and
without `http.client`, alternated so a busy machine slows both alike; prints the medians and
their difference (the cost `tau.kube.transport` pays for using the standard library).
"""

from __future__ import annotations

from paired import medians

RUNS = 40
BASE = "import ssl, socket, threading"


def main() -> int:
    a, b = medians(BASE, BASE + ", http.client", RUNS, flags=("-S",))
    print(
        f"interpreter + ssl/socket: median {a * 1e3:.1f} ms; + http.client: {b * 1e3:.1f} ms; "
        f"http.client costs {(b - a) * 1e3:.1f} ms per command ({RUNS} paired runs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
