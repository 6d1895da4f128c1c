#!/usr/bin/env bash
set -euo pipefail
echo "preparing data into ${TAU_OUTPUT_DIR:-/tmp}"
