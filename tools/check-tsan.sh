#!/usr/bin/env bash
# check-tsan.sh -- the thread tests (tests/test_threads.c, and
# tests/test_context.c with its shared-context test) built with
# ThreadSanitizer (clang, in build-tsan/): several threads on one context,
# a context per thread, concurrent create and release; every result is
# checked against the reference, and any TSan report fails the run
# (suppressions for the runtime only: tools/sanitizers/tsan.supp).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
. tools/sanitizers/env.sh

if [[ ! -f build-tsan/CMakeCache.txt ]]; then
    cmake -S . -B build-tsan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DATTN_SANITIZE=thread -DATTN_BUILD_TOOLS=OFF \
          -DATTN_TEST_POCL_CACHE="$POCL_CACHE_DIR"
fi
cmake --build build-tsan -j"$(nproc)" --target test_threads test_context
ctest --test-dir build-tsan --output-on-failure -j1 --timeout 900 -R '^(test_threads|test_context)$'
