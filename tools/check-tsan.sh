#!/usr/bin/env bash
# check-tsan.sh -- the thread tests (tests/test_threads.c, and
# tests/test_context.c with its shared-context test) built with
# ThreadSanitizer (clang, in build-tsan/): several threads on one context,
# a context per thread, concurrent create and release (also as the
# process's first OpenCL calls); every result is
# checked against the reference, and any TSan report fails the run
# (suppressions for the runtime only: tools/sanitizers/tsan.supp).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
. tools/sanitizers/env.sh

[[ -f build-tsan/CMakeCache.txt ]] || cmake --preset tsan   # CMakePresets.json
cmake --build build-tsan -j"$(nproc)" --target test_threads test_context
ctest --test-dir build-tsan --output-on-failure -j1 --timeout 900 \
    -R '^(test_threads|test_threads_first_use|test_context)$'
