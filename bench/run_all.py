"""Run every benchmark under bench/ and print their figures (`make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = 0
    for script in sorted(HERE.glob("*.py")):
        if script.name in ("run_all.py", "paired.py"):
            continue
        print(f"== {script.name}", flush=True)
        failed |= subprocess.run([sys.executable, str(script)], check=False).returncode != 0
    return int(failed)


if __name__ == "__main__":
    raise SystemExit(main())
