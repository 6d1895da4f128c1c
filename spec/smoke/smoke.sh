#!/bin/sh
# Prints where it ran, then exits 0: a smoke run that succeeds proves the platform path works.
set -eu
echo "tau smoke: running on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "tau smoke: ok"
