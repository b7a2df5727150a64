#!/usr/bin/env bash
# run-tests.sh -- the README's test command and CI's (.ci/run): sets up and
# builds (tools/setup.sh), then runs the stages in order, each under a
# header line, and ends with one line per stage and "N passed, N failed".
# The exit status is 0 only if every stage passed.
#
#   main      the CUnit suites with ctest (build/, Release)
#   asan      the same suites built with ASan + UBSan (build-asan/, clang)
#   fuzz      each libFuzzer target for $ATTN_FUZZ_SECONDS (default 45) s
#   tsan      the thread tests built with ThreadSanitizer (build-tsan/)
#   oclgrind  every kernel family on Oclgrind's simulated device
#   ptx       the programs of an NVIDIA H200 compiled to PTX and assembled
#             by NVIDIA's ptxas for sm_80 and sm_90 (no GPU needed)
#   amdgcn    the programs of an AMD GPU compiled by clang for gfx90a (CDNA2)
#             and gfx1030 (RDNA2) (no GPU needed)
#   intel     the programs of an Intel GPU compiled by Intel's own compiler
#             (ocloc, IGC) for Arc (Xe-HPG) and Iris Xe (Xe-LP) (no GPU needed)
#   rusticl   the GPU plans, mma, the work-group families' kernels at tiny
#             sizes and the API suites on a second OpenCL implementation,
#             Mesa's rusticl (llvmpipe)
#   valgrind  Memcheck over a subset of the tests and the example
#   install   cmake --install to a temporary prefix; the example built
#             through find_package and through pkg-config, and run
#
# Usage: run-tests.sh [STAGE...]   (default: all of them, in this order)
#        run-tests.sh --help|-h    (this text)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The header comment above, without its "# ": the usage and the stages.
usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' tools/run-tests.sh; }

all=(main asan fuzz tsan oclgrind ptx amdgcn intel rusticl valgrind install)
stages=("$@")
((${#stages[@]})) || stages=("${all[@]}")
for s in "${stages[@]}"; do
    case $s in -h | --help) usage; exit 0 ;; esac
    [[ " ${all[*]} " == *" $s "* ]] || { echo "run-tests: unknown stage '$s' (${all[*]})" >&2; exit 2; }
done

# CI's build: warnings are errors (users' builds leave ATTN_WERROR off).
ATTN_WERROR=ON ATTN_SETUP_TESTS=1 bash tools/setup.sh || { echo "run-tests: setup failed"; exit 1; }

run_stage() {
    case $1 in
    main) ctest --test-dir build --output-on-failure -j2 --timeout 900 ;;
    *) bash "tools/check-$1.sh" ;;
    esac
}

results=()
passed=0
failed=0
n=0
for s in "${stages[@]}"; do
    n=$((n + 1))
    echo
    echo "==================== stage $n/${#stages[@]}: $s ===================="
    t0=$SECONDS
    if run_stage "$s"; then
        r=passed
        passed=$((passed + 1))
    else
        r=FAILED
        failed=$((failed + 1))
    fi
    results+=("$(printf '  %-9s %-7s %4d s' "$s" "$r" $((SECONDS - t0)))")
done

echo
echo "==================== summary ===================="
printf '%s\n' "${results[@]}"
echo "$passed passed, $failed failed"
((failed == 0))
