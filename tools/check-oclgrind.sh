#!/usr/bin/env bash
# check-oclgrind.sh -- every kernel family on Oclgrind's simulated device
# (tests/oclgrind_kernels.c, built in build/ by tools/setup.sh): bounds,
# data races in local and global memory, barrier divergence and API misuse
# are reported into a log, and any report fails the run; the results must
# match the CPU reference as on any device.
#
# --uninitialized is not used: Oclgrind 21.10 stops with "Unsupported
# instruction: freeze" on the tiled family, and on the vector family reports
# a use of an uninitialised value inside max(float8, float8) of fully
# written data (a float16's .lo/.hi), then crashes in its plugin; both
# reproduce on a five-line kernel. tests/oclgrind_kernels.c instead runs the
# vector family again with its scratch buffers filled with NaN.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=build/oclgrind
rm -rf "$out"
mkdir -p "$out"
log=$out/oclgrind.log
set +e
ATTN_TEST_DEVICE=oclgrind ATTN_LOG=error ATTN_CACHE_DIR="$PWD/$out/attn-cache" \
    oclgrind --data-races --check-api --log "$log" build/tests/oclgrind_kernels
rc=$?
set -e
if [[ -s "$log" ]]; then
    echo "oclgrind: $(grep -c '^[A-Z]' "$log") report lines; the first ones:"
    head -40 "$log"
    exit 1
fi
echo "oclgrind: no reports (bounds, races, divergence, API)"
exit $rc
