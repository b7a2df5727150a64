#!/usr/bin/env bash
# check-fuzz.sh -- runs every libFuzzer target that build-asan/ has
# (fuzz/CMakeLists.txt lists them in build-asan/fuzz/fuzzers.txt) for a
# bounded time each, starting from a copy of its seed corpus in
# fuzz/corpus/<name>/, under ASan and UBSan, one target per core at a
# time, and reports executions and findings. A finding (crash, sanitizer report, leak, an allocation over
# the limit, a timeout) fails the run and leaves the input in
# build-asan/fuzz-work/<name>/.
# Usage: check-fuzz.sh [SECONDS per target, default $ATTN_FUZZ_SECONDS or 45]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
. tools/sanitizers/env.sh
secs=${1:-${ATTN_FUZZ_SECONDS:-45}}

bash tools/check-asan.sh --build-only
list=build-asan/fuzz/fuzzers.txt
export ATTN_CACHE_DIR="$ROOT/build-asan/attn-cache"
# One target per core at a time (libFuzzer runs on one thread); each
# writes its own log and exit status, reported in the list's order.
fuzz_one() {
    local name=$1 bin=$2 seeds=$3
    local work="$ROOT/build-asan/fuzz-work/$name"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/tmp"
    [[ -d "$seeds" ]] && cp -r "$seeds/." "$work/corpus/"
    find "$work/corpus" -type f | wc -l > "$work/nseeds"
    # inputs are at most 4 KiB: no legitimate allocation comes near 64 MiB
    local rc=0
    (cd "$work" && TMPDIR="$work/tmp" "$bin" -max_total_time="$secs" -timeout=30 \
        -malloc_limit_mb=64 -rss_limit_mb=3072 -print_final_stats=1 corpus) > "$work/log" 2>&1 ||
        rc=$?
    echo "$rc" > "$work/rc"
}

report() {
    local name=$1 work="$ROOT/build-asan/fuzz-work/$1"
    # a target that died early has no statistics: "?" each, never an exit
    local rc runs speed added cov
    rc=$(cat "$work/rc" 2>/dev/null || echo "no status")
    [[ -f "$work/log" ]] || echo "(no log: the target did not start)" > "$work/log"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1) || true
    speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1) || true
    added=$(sed -n 's/^stat::new_units_added: *//p' "$work/log" | tail -1) || true
    cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -1 | cut -d' ' -f2) || true
    printf 'fuzz: %-20s %ss: %s executions (%s/s), %s seeds, %s new inputs, coverage %s edges: ' \
        "$name" "$secs" "${runs:-?}" "${speed:-?}" "$(cat "$work/nseeds" 2>/dev/null || echo '?')" \
        "${added:-?}" "${cov:-?}"
    if [[ $rc == 0 ]]; then
        echo "no findings"
    else
        failed=1
        echo "FINDING (exit $rc)"
        grep -E 'FUZZ FINDING|ERROR: |runtime error|SUMMARY|Test unit written|==[0-9]+== ?ERROR' "$work/log" | head -20 || true
        echo "  (full log: $work/log)"
    fi
    # the target's own summary, when it prints one
    sed -n '/^fuzz_[a-z_]*: [0-9]* rejected/,/^$/p' "$work/log" 2>/dev/null | sed 's/^/  /' || true
}

names=()
while read -r name bin seeds; do
    [[ -n "$name" ]] || continue
    names+=("$name")
    while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
    fuzz_one "$name" "$bin" "$seeds" </dev/null & # not the list: the loop reads it
done < "$list"
wait
failed=0
for name in "${names[@]}"; do report "$name"; done
exit $failed
