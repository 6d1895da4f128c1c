#!/usr/bin/env bash
# Install what the team store tests run against, idempotently: Debian's PostgreSQL server and
# versitygw (an S3-compatible server, built from the Go module proxy into the shared cache).
# .ci/run calls it; on a developer machine without them the tests skip with this hint.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
fi
"${PYTHON:-.venv/bin/python}" -m tests.teamstore.build
