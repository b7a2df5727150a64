#!/usr/bin/env bash
# run-tests.sh -- sets up and builds (tools/setup.sh), then runs every test
# suite with ctest. The exit status is ctest's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/setup.sh
exec ctest --test-dir build --output-on-failure -j2 --timeout 900
