"""What the plain status view saves a `tau run status` printed to a pipe: rich's import.

`tau.status.plain` lays the colourless status view out itself, byte for byte as rich does (its
tests use rich as the oracle). It is kept only while this paired measure shows it saving more
than 20 ms per command: fresh interpreters that import the status view's own modules, with and
without what rich's layout of the same view imports, alternated so a busy machine slows both
alike.
"""

from __future__ import annotations

from pathlib import Path

from paired import medians

RUNS = 30
ROOT = Path(__file__).resolve().parents[1]
BASE = "import tau.status.plain, tau.status.view"
RICH = BASE + ", rich.console, rich.table, rich.tree, rich.text, rich.padding"


def main() -> int:
    a, b = medians(BASE, RICH, RUNS, cwd=ROOT / "src")
    print(
        f"status view without rich: median {a * 1e3:.1f} ms; with rich's layout imported: "
        f"{b * 1e3:.1f} ms; the plain view saves {(b - a) * 1e3:.1f} ms ({RUNS} paired runs)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
