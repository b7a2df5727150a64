#!/usr/bin/env bash
# check-valgrind.sh -- Memcheck (--leak-check=full) over a subset that
# covers attn's host code: the CPU reference and conversions
# (test_reference), argument validation with real contexts and buffers
# (test_validation, less the tests that compile kernels), attn-info, and
# examples/attention.c (context, program build and disk cache, scratch,
# forward, release). Any Memcheck error or definite leak fails; reports
# that belong to glibc's loader or to PoCL's compiler are suppressed in
# tools/sanitizers/valgrind.supp, and the suppressions say why.
#
# Under Valgrind PoCL sees a CPU without AVX-512 and compiles every kernel
# anew, about a minute each: hence a subset, its own PoCL cache, and
# POCL_WORK_GROUP_SPECIALIZATION=0 (one compiled variant per kernel).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=$PWD/build/valgrind
mkdir -p "$out"
export POCL_CACHE_DIR=$out/pocl-cache ATTN_CACHE_DIR=$out/attn-cache
export POCL_WORK_GROUP_SPECIALIZATION=0
cc -std=c11 -O2 -g examples/attention.c -Iinclude -Lbuild -lattn -lOpenCL -lm \
   -Wl,-rpath,"$PWD/build" -o "$out/attention"

vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite --num-callers=50
    --error-exitcode=99 --suppressions=tools/sanitizers/valgrind.supp)
failed=0
run() {
    local name=$1
    shift
    local t0=$SECONDS rc=0
    "${vg[@]}" "$@" > "$out/$name.log" 2>&1 || rc=$?
    local lost
    lost=$(grep -o 'definitely lost: [0-9,]* bytes' "$out/$name.log" | tail -1 || true)
    printf 'valgrind: %-16s %4ds  %s  %s\n' "$name" $((SECONDS - t0)) \
        "$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$out/$name.log" | tail -1)" "${lost:-no leaks}"
    if [[ $rc -ne 0 ]]; then
        failed=1
        grep -B2 -A30 -E 'Invalid|uninitialised|definitely lost in loss' "$out/$name.log" | head -80
        echo "  (full log: $out/$name.log)"
    fi
}
ATTN_TEST_SKIP=test_reference_speed run test_reference build/tests/test_reference
ATTN_TEST_SKIP=test_null_arguments,test_buffer_sizes,test_overlaps,test_fused_layout,test_prepare_validation \
    run test_validation build/tests/test_validation
run attn-info build/tools/attn-info
run example "$out/attention"
exit $failed
