#!/usr/bin/env bash
# check-asan.sh -- the whole test suite built with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang, in build-asan/, which also holds the
# libFuzzer targets that tools/check-fuzz.sh runs). UBSan stops at its first
# report; LeakSanitizer's reports from the OpenCL runtime are suppressed by
# tools/sanitizers/lsan.supp, attn's own must be zero.
# Usage: check-asan.sh [--build-only]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
. tools/sanitizers/env.sh

[[ -f build-asan/CMakeCache.txt ]] || cmake --preset asan   # CMakePresets.json
cmake --build build-asan -j"$(nproc)"
[[ "${1:-}" == --build-only ]] && exit 0
ctest --test-dir build-asan --output-on-failure -j2 --timeout 900
