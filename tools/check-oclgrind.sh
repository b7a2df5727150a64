#!/usr/bin/env bash
# check-oclgrind.sh -- every kernel on Oclgrind's simulated device
# (tests/oclgrind_kernels.c, built in build/ by tools/setup.sh): bounds,
# data races in local and global memory, barrier divergence and API misuse
# are reported into a log, and any report fails the run; the results must
# match the CPU reference as on any device.
#
# Two passes. The first runs the optimised kernels (as a device would) with
# --data-races --check-api. The second adds --uninitialized, every value a
# kernel branches on, indexes with or stores must be defined, with the
# kernels built at -O0 (OCLGRIND_BUILD_OPTIONS=-cl-opt-disable): Oclgrind
# 21.10's uninitialised-value plugin crashes (SIGSEGV) on the optimiser's
# shuffles with undefined mask lanes, in the vector family and the peak
# kernel, and stops with "Unsupported instruction: freeze" on the tiled
# family; at -O0 all of them run. It also marks every shuffle's result
# undefined, even of defined data, so ATTN_FOLD_THROUGH_MEMORY makes
# fold_pair (cl/vector_helpers.cl) go through memory in this pass; the first
# pass runs the shuffles. ATTN_OCLGRIND_UNINITIALIZED=1 tells the
# test about the pass (tests/oclgrind_kernels.c says what it changes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=build/oclgrind
rm -rf "$out"
mkdir -p "$out"

# pass NAME OCLGRIND_OPTION... -- runs the test under oclgrind, fails on any report
pass() {
    local name=$1 log=$out/$1.log rc
    shift
    set +e
    ATTN_TEST_DEVICE=oclgrind ATTN_LOG=error ATTN_CACHE_DIR="$PWD/$out/attn-cache-$name" \
        oclgrind "$@" --log "$log" build/tests/oclgrind_kernels
    rc=$?
    set -e
    if [[ -s "$log" ]]; then
        echo "oclgrind ($name): $(grep -c '^[A-Z]' "$log") report lines; the first ones:"
        head -40 "$log"
        return 1
    fi
    if [[ $rc -ne 0 ]]; then
        echo "oclgrind ($name): exit status $rc"
        return "$rc"
    fi
    echo "oclgrind ($name): no reports"
}

pass checks --data-races --check-api
ATTN_OCLGRIND_UNINITIALIZED=1 OCLGRIND_BUILD_OPTIONS="-cl-opt-disable -DATTN_FOLD_THROUGH_MEMORY" \
    pass uninitialized --data-races --check-api --uninitialized
