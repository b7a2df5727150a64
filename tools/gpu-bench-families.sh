#!/usr/bin/env bash
# gpu-bench-families.sh -- the prefill families side by side on a GPU, in one
# run, for issues 11 and 12: the default plan (on an NVIDIA device of compute
# capability 8.0 or more, the mma family once verified: f16/bf16, and f32
# through 3xTF32), the tiled, flash and mma families forced, and PyTorch's
# SDPA on the same shapes (tools/compare-torch.py, when torch imports); the
# decode set, and decode where mma is the plan against tiled; then a short attn-tune of the mma and flash families. Runs
# after tools/gpu-check.sh has built build-gpu/ (the same machine, the same
# session). Rounds alternate the families, so that a noisy neighbour shows
# as spread, not as a ranking. Everything goes under $OUT (default
# build-gpu/families/); the exit status is that of the last failed step, 0
# when every step ran.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sel=${1:-nvidia}
rounds=${ROUNDS:-2}
b=build-gpu
out=${OUT:-$b}/families
mkdir -p "$out"
rc=0
run() { # a step: its command line, then its output, into the log
    echo "==== $* ($(date +%T))" | tee -a "$out/log.txt"
    "$@" >>"$out/log.txt" 2>&1 || { rc=$?; echo "  FAILED ($rc)" | tee -a "$out/log.txt"; }
}

run "$b/tools/attn-info" --device "$sel"
# the gate's own tests on this device (the PTX check and the verification)
run env ATTN_TEST_DEVICE="$sel" "$b/tests/test_mma_ops"
run env ATTN_TEST_DEVICE="$sel" "$b/tests/test_mma_gate"
# fp32 drift over long rows on this device, mma's f32 (3xTF32) up to its
# key limit next to the compensated families (README's table)
run env ATTN_TEST_DEVICE="$sel" ATTN_LONG_CONTEXT_TABLE=1 timeout 120 "$b/tests/test_long_context"

# family parameter sets: the plan's own choice first
tiled=family=tiled,rows=16,keys=32,wg=128,local_kv=1
sets=("" "$tiled" family=flash,rows=32,keys=16,tm=2,tn=2 family=mma,warps=4,keys=64,mtiles=1
      family=mma,warps=4,keys=32,mtiles=2 family=mma,warps=8,keys=64,mtiles=1)
shapes=("--q-heads 8 --kv-heads 2 --head-dim 64 --seq 2048"
        "--q-heads 8 --kv-heads 2 --head-dim 64 --seq 4096"
        "--q-heads 32 --kv-heads 8 --head-dim 128 --seq 2048"
        "--batch 4 --q-heads 32 --kv-heads 8 --head-dim 64 --seq 4096"
        "--batch 4 --q-heads 32 --kv-heads 8 --head-dim 128 --seq 4096")
for ((r = 1; r <= rounds; r++)); do
    for si in "${!shapes[@]}"; do
        for pi in "${!sets[@]}"; do
            f=$out/bench-r$r-shape$si-set$pi.csv
            echo "==== round $r, ${shapes[$si]}, ATTN_PARAMS='${sets[$pi]}' -> $f" >>"$out/log.txt"
            # shellcheck disable=SC2086 # the shape is a list of options
            ATTN_PARAMS=${sets[$pi]} "$b/tools/attn-bench" --device "$sel" ${shapes[$si]} \
                --dtype f16,bf16,f32 --reps 10 --format csv >"$f" 2>>"$out/log.txt" ||
                { rc=$?; echo "  FAILED ($rc)" | tee -a "$out/log.txt"; }
        done
    done
done

# decode (issue 11): the DESIGN decode set, f32 and f16 caches, contiguous
# and paged by 16, int8 too, each a share of the copy bandwidth (the tiled
# core's 16-byte staging); then a chunked prefill of 512 queries against
# 4096 keys through the cache (the long-block path)
run "$b/tools/attn-bench" --device "$sel" --decode --dtype f32,f16 --kv-int8 \
    --block-size 0,16 --reps 20
run "$b/tools/attn-bench" --device "$sel" --decode --q-len 512 --kv-len 4096 --dtype f32,f16 \
    --block-size 0,16 --reps 10

# decode on the tensor cores (issue 12): where a KV head has 16 query rows
# or more the plan is mma once verified. A speculative block of 8 (32 rows
# per KV head) and MQA (32 query heads on one KV head), the plan's own
# choice against the tiled decode forced, rounds alternating
tiled_decode=family=tiled,rows=16,keys=64,wg=128,local_kv=1
for ((r = 1; r <= rounds; r++)); do
    for params in "" "$tiled_decode"; do
        run env ATTN_PARAMS="$params" "$b/tools/attn-bench" --device "$sel" --decode --q-len 8 \
            --dtype f16,f32 --reps 20
        run env ATTN_PARAMS="$params" "$b/tools/attn-bench" --device "$sel" --decode \
            --q-heads 32 --kv-heads 1 --dtype f16,bf16 --reps 20
    done
done

if python3 -c 'import torch' 2>/dev/null; then
    for shape in "--batch 4 --q-heads 32 --kv-heads 8 --head-dim 128 --seq 4096" \
                 "--q-heads 32 --kv-heads 8 --head-dim 128 --seq 2048" \
                 "--q-heads 8 --kv-heads 2 --head-dim 64 --seq 2048"; do
        for dt in f16 f32; do
            # shellcheck disable=SC2086
            run python3 tools/compare-torch.py --lib "$b/libattn.so" --device "$sel" \
                --torch-device cuda --dtype "$dt" $shape --bench 10
        done
    done
else
    echo "torch does not import here: no PyTorch comparison" | tee -a "$out/log.txt"
fi

ATTN_TUNING_DB=$out/tune.json run timeout 330 "$b/tools/attn-tune" --device "$sel" \
    --family mma --budget 240 \
    --shapes b=4:hq=32:hkv=8:d=128:s=4096:f16,hq=8:hkv=2:d=64:s=2048:f16,b=4:hq=32:hkv=8:d=128:s=4096
ATTN_TUNING_DB=$out/tune.json run timeout 200 "$b/tools/attn-tune" --device "$sel" \
    --family flash --budget 150 --shapes b=4:hq=32:hkv=8:d=128:s=4096,hq=8:hkv=2:d=64:s=2048
ATTN_TUNING_DB=$out/tune.json run "$b/tools/attn-tune" --device "$sel" --compare \
    --shapes b=4:hq=32:hkv=8:d=128:s=4096:f16,hq=8:hkv=2:d=64:s=2048:f16,b=4:hq=32:hkv=8:d=128:s=4096
echo "gpu-bench-families: done (status $rc); logs in $out" | tee -a "$out/log.txt"
exit "$rc"
