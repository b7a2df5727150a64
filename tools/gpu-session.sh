#!/usr/bin/env bash
# gpu-session.sh -- a whole GPU session's checks and measurements in one
# call, the most needed first, within a time budget (issues 11 and 12: a
# lent H200 gives a session 15 minutes, machine start included, and one
# call at most 10). Each step runs under `timeout`, bounded by what is left
# of the budget; a step that would start with too little left is skipped and
# says so. After every step the results are packed into $OUT/session.tar.gz
# and the summary copied to $OUT/summary.txt, so what finished comes back
# even when the call is killed (the device tool returns at most 8 files
# from $OUT). The summary names the GPU and gives each prefill row's type,
# family, GFLOP/s, share of peak and check, and each torch line. The
# steps, in order (what one call of --budget 540 is expected to reach
# first: a second call is unlikely, since the machine goes back 30 s after
# a call and a fresh one needs 4 minutes of the 15):
#   build    tools/gpu-check.sh --no-tests --no-bench: .debs, ICD, build-gpu/
#   gate     attn-info, the mma family's PTX check and gate tests on the device
#   prefill  attn-bench, interleaved f16/bf16/f32, the default plan (mma
#            where the gate verified it) on B=1 Hq=8 D=64 S=2048 (checked
#            against the CPU reference) and B=4 Hq=32 Hkv=8 D=128 S=4096
#            (the targets)
#   ctest    the suites that run the kernels (forward, flash, mma, decode,
#            variants, non-finite inputs, the seed's failures, GPU plans)
#            on the device: no kernel of attn's has been checked on a GPU
#   torch    tools/compare-torch.py --bench on the target shapes (B=4 Hq=32
#            Hkv=8, D=128 and D=64, S=4096, every type), the small one and
#            B=1 Hq=32 D=128 S=2048 (when torch imports)
#   sets     prefill's two shapes again under each set of
#            tools/gpu-prefill-sets.txt (a second mma shape, mma reading Q
#            at each k-step, mma's spill-free corner, tiled, flash without
#            and with prefetch)
#   decode   the DESIGN decode set (f32/f16, contiguous and paged, int8) as a
#            share of copy bandwidth, its splits; mma decode (a speculative
#            block of 8, MQA) against the tiled decode forced
#   tune     attn-tune of mma and flash (within what the budget leaves),
#            then attn-tune --compare: tuned against default
#   regs     NVIDIA's ptxas figures (registers, stack frame, spills) of each
#            prefill set's programs at D=128, f16 and f32 (-cl-nv-verbose)
#   more     the plan and the sets on B=1 Hq=32 D=128 S=2048 and B=4 D=64 S=4096
#   again    a second round of prefill on all four shapes, the families in
#            the other order (noise shows as spread)
#   drift    f32 drift over long rows, mma's 3xTF32 next to the compensated families
# The mma family has never run on a GPU: when attn-info (whose family
# status runs the gate's checks) or the plan's first run on a small shape
# runs out of time (a kernel that never ends: a headless GPU has no
# watchdog), every later step keeps off mma (the prefill plan forced
# to flash, which leaves mma's gate unrun; mma's sets and decode plan, tune,
# ctest and drift skipped), also in a later call without the gate step (a
# marker in build-gpu/), and a round of prefill runs stops after two runs in
# a row out of time.
# Usage: tools/gpu-session.sh [--debs FOLDER] [--platform SEL] [--budget SECONDS]
#                             [--steps LIST] [--rehearse]
set -uo pipefail
start_dir=$(pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

usage() {
    sed -n '2,/^# Usage/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<EOF
  --debs FOLDER     passed to tools/gpu-check.sh (the .debs of tools/gpu-prepare-debs.sh)
  --platform SEL    the attn device selector (default nvidia)
  --budget SECONDS  wall time the whole script may take (default 540); give the
                    device call a timeout a little above it
  --steps LIST      comma-separated steps to run (default all, in the order above;
                    build is always run unless build-gpu/ has been built)
  --rehearse        the same steps on small shapes, torch on the CPU, no ctest or
                    drift: a check of this script on a machine without a GPU
                    (PoCL), so that device time is not spent finding its mistakes
EOF
}

debs="" sel=nvidia budget=540 rehearse=0
steps=build,gate,prefill,ctest,torch,sets,decode,tune,regs,more,again,drift
while (($#)); do
    case $1 in
    --debs) debs=${2:?--debs needs a folder}; shift 2 ;;
    --platform) sel=${2:?--platform needs a selector}; shift 2 ;;
    --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
    --steps) steps=${2:?--steps needs a list}; shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu-session: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu-session: --budget must be seconds" >&2; exit 2; }
setfile=tools/gpu-prefill-sets.txt # before any step: the prefill step needs it
[[ -r $setfile ]] || { echo "gpu-session: cannot read $setfile" >&2; exit 2; }
budget=$((10#$budget))
[[ -z $debs || $debs == /* ]] || debs=$start_dir/$debs # relative to where we were started

t0=$SECONDS
b=build-gpu
work=$b/session
out=${OUT:-$b}
rm -rf "$work"
mkdir -p "$work" "$out"
summary=$work/summary.txt
echo "gpu-session $(date -u +%FT%TZ) selector=$sel budget=${budget}s steps=$steps" >"$summary"
rc=0 last=0 last_limit=0 # the session's status; the last step's, and its limit

left() { echo $((budget - (SECONDS - t0))); }
want() { [[ ,$steps, == *,$1,* ]]; }
pack() {
    tar czf "$out/session.tar.gz.part" -C "$b" session && mv "$out/session.tar.gz.part" "$out/session.tar.gz"
    cp "$summary" "$out/summary.txt"
}
# run NAME MAXSECONDS CMD...: one measurement or check, its output in
# $work/NAME.log, its line in the summary
run() {
    local name=$1 max=$2 l t start status
    shift 2
    l=$(left)
    last=-1 last_limit=0 # -1: skipped
    if ((l < 30)); then
        printf '%-28s skipped: %ss of the budget left\n' "$name" "$l" | tee -a "$summary"
        return
    fi
    t=$((max < l - 15 ? max : l - 15))
    last_limit=$t
    echo "==== $name: $* (limit ${t}s, $(date +%T))" | tee -a "$work/$name.log"
    start=$SECONDS
    timeout -k 5 "$t" "$@" >>"$work/$name.log" 2>&1
    status=$?
    last=$status
    if ((status == 0)); then
        printf '%-28s ok (%ss)\n' "$name" $((SECONDS - start)) | tee -a "$summary"
    else
        rc=$status
        printf '%-28s FAILED: exit %s%s (%ss)\n' "$name" "$status" \
            "$( ((status == 124 || status == 137)) && echo ', out of time')" \
            $((SECONDS - start)) | tee -a "$summary"
    fi
    pack
}

# ---- build (gpu-check.sh's unpacking, ICD and build; its tests and bench are ours) ----
# (a later call that carries the .debs again replaces the folder it was
# unpacked in, which the build's libraries and ICD point into: unpack again)
if want build || [[ ! -x $b/tools/attn-bench ]] || [[ -n $debs && ! -f $debs/root/.unpacked ]]; then
    args=(--platform "$sel" --no-tests --no-bench)
    [[ -n $debs ]] && args+=(--debs "$debs")
    run build 240 env OUT="$work" bash tools/gpu-check.sh "${args[@]}"
fi
if [[ ! -x $b/tools/attn-bench ]]; then
    echo "gpu-session: no build in $b; see $work/build.log" | tee -a "$summary"
    pack
    exit 1
fi
# shellcheck disable=SC1091 # written by gpu-check.sh
[[ -f $b/gpu-env.sh ]] && source "$b/gpu-env.sh"
export ATTN_DEVICE=$sel ATTN_TEST_DEVICE=$sel

# ---- gate: is mma the plan here, and why (attn-info) ----
# hung WHY: mma kept off for the rest of the session (and, through a
# marker in build-gpu/, for a later call on the same machine)
hung() {
    mma_hung=1
    touch "$b/mma-hung"
    printf '%-28s kept off: %s\n' mma "$1" | tee -a "$summary"
}
timed_out() { ((last == 124 || last == 137)); }
if command -v nvidia-smi >/dev/null; then # which GPU (an H100 or an H200), for the summary
    echo "gpu: $(timeout 20 nvidia-smi --query-gpu=name,clocks.max.sm,memory.total \
        --format=csv,noheader 2>&1 | head -1)" >>"$summary"
fi
if [[ -f $b/mma-hung ]]; then
    hung "an earlier call's gate or plan probe ran out of time"
elif want gate; then
    # the GPU's clocks, throttling and other users, for reading the timings
    if command -v nvidia-smi >/dev/null; then
        run gpu-state 20 nvidia-smi -q -d CLOCK,PERFORMANCE,UTILIZATION,MEMORY
    fi
    # the debug log holds a failed build's whole compiler log; its family
    # status runs the gate's checks, mma's first kernels on the device
    run attn-info 90 env ATTN_LOG=debug "$b/tools/attn-info" --device "$sel"
    if timed_out && ((last_limit >= 90)); then
        hung "attn-info (the gate's first kernels) ran out of time"
    else
        run mma-ops 60 "$b/tests/test_mma_ops"
        # (on a CPU the gate's doctored families run emulated: minutes)
        run mma-gate $((rehearse ? 240 : 120)) "$b/tests/test_mma_gate"
        # the plan on a small shape, its first use (the gate's verification)
        # included: out of time here, every later run of the plan would be
        # too. 90 s: the gate builds 12 programs for f16 and f32 (NVIDIA's
        # compile time for them never measured), and a verdict of "hung"
        # keeps mma off for the whole session
        run plan-probe 90 "$b/tools/attn-bench" --device "$sel" --batch 1 --q-heads 8 \
            --kv-heads 2 --head-dim 64 --seq 256 --dtype f16,f32 --reps 1 --no-check --format csv
        # (a probe cut short by the budget decides nothing)
        timed_out && ((last_limit >= 90)) && hung "the plan's first run ran out of time"
    fi
fi
# skip_hung NAME: 0 (and a summary line) when mma is kept off and the step
# would run it anyway (its gate in a default plan, or mma forced)
skip_hung() {
    ((${mma_hung:-0})) || return 1
    printf '%-28s skipped: mma kept off, and it would plan mma\n' "$1" | tee -a "$summary"
}

# ---- prefill: the issues' shapes, each family forced next to the plan ----
# the plan (checked against the CPU reference), then the sets of
# tools/gpu-prefill-sets.txt, which check-ptx.sh assembles too
mapfile -t sets < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$setfile" | grep .)
sets=("" "${sets[@]}")
if ((${mma_hung:-0})); then
    # the plan would be mma, and so would decode's with many rows a KV
    # head: the plan forced to the last flash set (which the torch step's
    # attn_forward takes too), mma's sets left out
    flash_set=""
    for s in "${sets[@]}"; do [[ $s == family=flash* ]] && flash_set=$s; done
    export ATTN_PARAMS=$flash_set
    kept=() # (the flash set is the plan now: not twice a round)
    for s in "${sets[@]:1}"; do [[ $s == family=mma* || $s == "$flash_set" ]] || kept+=("$s"); done
    sets=("$flash_set" "${kept[@]}")
fi
# (the same options serve attn-bench and compare-torch.py)
shapes=("--batch 1 --q-heads 8 --kv-heads 2 --head-dim 64 --seq 2048"
        "--batch 4 --q-heads 32 --kv-heads 8 --head-dim 128 --seq 4096"
        "--batch 1 --q-heads 32 --kv-heads 8 --head-dim 128 --seq 2048"
        "--batch 4 --q-heads 32 --kv-heads 8 --head-dim 64 --seq 4096")
tshapes=b=4:hq=32:hkv=8:d=128:s=4096,hq=8:hkv=2:d=64:s=2048
mshapes=b=4:hq=32:hkv=8:d=128:s=4096:f16,hq=8:hkv=2:d=64:s=2048:f16,b=4:hq=32:hkv=8:d=128:s=4096
dshape=() torch_device=cuda chunk=(--q-len 512 --kv-len 4096)
if ((rehearse)); then # the same steps on shapes a CPU runs in seconds
    shapes=("--batch 1 --q-heads 4 --kv-heads 2 --head-dim 64 --seq 128"
            "--batch 2 --q-heads 4 --kv-heads 2 --head-dim 32 --seq 96"
            "--batch 1 --q-heads 2 --kv-heads 1 --head-dim 48 --seq 80"
            "--batch 1 --q-heads 2 --kv-heads 2 --head-dim 16 --seq 64")
    tshapes=hq=4:hkv=2:d=64:s=128 mshapes=hq=4:hkv=2:d=32:s=64:f16
    dshape=(--batch 1 --q-heads 8 --kv-heads 2 --head-dim 64 --kv-len 512) torch_device=cpu
    chunk=("${dshape[@]}" --q-len 96) # past ATTN_DECODE_MAX_Q_LEN, as 512 is: prefill on the cache
    steps=${steps/ctest/} steps=${steps/drift/} # CI's job, and minutes on a CPU
fi
# note_prefill NAME: the step's attn-bench CSV rows into the summary (type,
# family, GFLOP/s, share of the same-run peak, check), so that it alone
# shows what ran and how fast
note_prefill() {
    command -v python3 >/dev/null || return 0
    timeout 20 python3 - "$work/$1.log" >>"$summary" 2>/dev/null <<'PY' || true
import csv, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
heads = [i for i, l in enumerate(lines) if l.startswith("batch,")]
if heads:
    body = [lines[heads[0]]] + [l for l in lines[heads[0] + 1:] if l[:1].isdigit()]
    for r in csv.DictReader(body):
        print("    %s %-6s %9s GFLOP/s %5.1f%% of peak, check %s" % (
            r["dtype"], r["family"], r["gflops"], 100 * float(r["peak_fraction"] or 0),
            r["check"]))
PY
}
# prefill_round ROUND ORDER(forward|reverse) SETS(plan|sets|all) SHAPE...
prefill_round() {
    local r=$1 si pi check timeouts=0
    local -a order=("${!sets[@]}")
    [[ $3 == plan ]] && order=(0)
    [[ $3 == sets ]] && order=("${order[@]:1}")
    [[ $2 == reverse ]] && mapfile -t order < <(printf '%s\n' "${order[@]}" | sort -rn)
    shift 3
    for si in "$@"; do
        check=--no-check
        ((si == 0 && r == 1)) && check=--check
        for pi in "${order[@]}"; do
            if ((timeouts >= 2)); then
                printf '%-28s skipped: two runs in a row out of time\n' "prefill-r$r-s$si-p$pi" |
                    tee -a "$summary"
                continue
            fi
            # shellcheck disable=SC2086 # the shape is a list of options
            run "prefill-r$r-s$si-p$pi" 60 env ATTN_PARAMS="${sets[$pi]}" \
                "$b/tools/attn-bench" --device "$sel" ${shapes[$si]} --dtype f16,bf16,f32 \
                --reps 10 $check --format csv
            ((last >= 0)) && note_prefill "prefill-r$r-s$si-p$pi"
            if ((last == 124 || last == 137)); then ((timeouts++)); else timeouts=0; fi
        done
    done
}
printf '%s\n' "${sets[@]/#/set: }" "${shapes[@]/#/shape: }" >"$work/prefill-sets.txt"
want prefill && prefill_round 1 forward plan 0 1

# ---- ctest: the suites that run the kernels, on the device ----
if want ctest && ! skip_hung ctest; then
    # (the gate's tests and the drift table have steps of their own;
    # test_cl_faults reruns its workloads about 600 times on a GPU, one
    # pass building from source: gpu-check.sh runs it, this short session
    # does not)
    run ctest 150 ctest --test-dir "$b" --output-on-failure -j8 --timeout 140 \
        -R 'test_(forward|flash|mma|decode|variants|nonfinite|seed_failures|gpu_plans)' \
        -E 'test_mma_ops|test_mma_gate'
fi

# ---- torch: PyTorch's SDPA backends on the same GPU, same inputs ----
if want torch; then
    torch_py="" # the first that imports it: a pyenv or venv python3 misses Debian's
    for py in python3 /usr/bin/python3; do
        if timeout 60 "$py" -c 'import torch' 2>/dev/null; then torch_py=$py; break; fi
    done
    if [[ -n $torch_py ]]; then
        # the targets' shapes (D=128 and D=64) in every type (D=128 causal,
        # and padded by lengths); the small one over every case; B=1 D=128
        for job in "1 f16,bf16,f32 plain,lengths" "3 f16,bf16,f32 plain" \
                   "0 f16,f32 plain,noncausal,lengths,mask,window" "2 f16,bf16,f32 plain"; do
            read -r si dt cases <<<"$job"
            # shellcheck disable=SC2086
            run "torch-s$si" 150 "$torch_py" tools/compare-torch.py --lib "$b/libattn.so" \
                --device "$sel" --torch-device "$torch_device" --dtype "$dt" ${shapes[$si]} \
                --cases "$cases" --bench 10 --json "$work/torch-s$si.json"
            grep -h 'TFLOP/s' "$work/torch-s$si.log" 2>/dev/null | sed 's/^/    /' >>"$summary"
        done
    else
        echo "torch                        skipped: neither python3 nor /usr/bin/python3 imports torch" |
            tee -a "$summary"
    fi
fi

# ---- sets: each family forced next to the plan, on prefill's shapes ----
want sets && prefill_round 1 forward sets 0 1

# ---- decode ----
if want decode; then
    tiled_decode=family=tiled,rows=16,keys=64,wg=128,local_kv=1
    run decode-set 90 "$b/tools/attn-bench" --device "$sel" --decode --dtype f32,f16 --kv-int8 \
        --block-size 0,16 --reps 20 "${dshape[@]}"
    run decode-splits 60 "$b/tools/attn-bench" --device "$sel" --decode --splits auto,4,16,32 \
        --dtype f32,f16 --reps 20 "${dshape[@]}"
    # (512 rows a KV head: the plan is mma once verified, tiled when mma is off)
    run decode-chunk 45 env ATTN_PARAMS="${mma_hung:+$tiled_decode}" "$b/tools/attn-bench" \
        --device "$sel" --decode "${chunk[@]}" --dtype f32,f16 --block-size 0,16 --reps 10
    # where a KV head has 16 query rows or more the plan is mma once verified:
    # a speculative block of 8 and MQA, the plan against the tiled decode forced
    plan_decode=("")
    ((${mma_hung:-0})) && plan_decode=() # the plan there is mma
    for params in "${plan_decode[@]}" "$tiled_decode"; do
        tag=${params:+tiled}
        run "decode-spec8-${tag:-plan}" 45 env ATTN_PARAMS="$params" "$b/tools/attn-bench" \
            --device "$sel" --decode --q-len 8 --dtype f16,f32 --reps 20 "${dshape[@]}"
        run "decode-mqa-${tag:-plan}" 45 env ATTN_PARAMS="$params" "$b/tools/attn-bench" \
            --device "$sel" --decode --dtype f16,bf16 --reps 20 "${dshape[@]}" --q-heads 32 \
            --kv-heads 1
    done
fi

# ---- tune: tuned against default, within what the budget leaves (the
# search's own --budget ends before the step's limit, so that it saves) ----
if want tune && ! skip_hung tune; then
    db=$work/tune.json
    # tune_budget MAX: seconds for attn-tune's search, leaving the compare
    # (about 60 s) and the step's own margin
    tune_budget() { local l; l=$(left); l=$(((l - 100) / 2)); echo $((l < $1 ? l : $1)); }
    tb=$(tune_budget 90)
    if ((tb >= 20)); then
        run tune-mma $((tb + 40)) env ATTN_TUNING_DB="$db" "$b/tools/attn-tune" --device "$sel" \
            --family mma --budget "$tb" --shapes "$mshapes"
    fi
    tb=$(tune_budget 60)
    ((tb >= 20)) && run tune-flash $((tb + 40)) env ATTN_TUNING_DB="$db" "$b/tools/attn-tune" \
        --device "$sel" --family flash --budget "$tb" --shapes "$tshapes"
    if [[ -s $db ]]; then
        run tune-compare 90 env ATTN_TUNING_DB="$db" "$b/tools/attn-tune" --device "$sel" \
            --compare --shapes "$mshapes"
    else
        echo "tune                         skipped or nothing stored: no compare" | tee -a "$summary"
    fi
fi

# ---- regs: NVIDIA's own register and spill figures (after the timings:
# a diagnosis of them, and each program is built once more) ----
if want regs; then
    # programs built afresh (a cache of their own) at debug level: program.c
    # then builds with -cl-nv-verbose and logs the build log, ptxas's lines
    rm -rf "$b/regs-cache"
    for pi in "${!sets[@]}"; do
        run "regs-p$pi" 45 env ATTN_LOG=debug ATTN_CACHE_DIR="$b/regs-cache" \
            ATTN_PARAMS="${sets[$pi]}" "$b/tools/attn-bench" --device "$sel" --batch 1 \
            --q-heads 32 --kv-heads 8 --head-dim 128 --seq 256 --dtype f16,f32 --reps 1 \
            --no-check --format csv
    done
fi

want more && prefill_round 1 forward all 2 3

want again && prefill_round 2 reverse all 0 1 2 3
want drift && ! skip_hung drift && run drift 120 env ATTN_LONG_CONTEXT_TABLE=1 "$b/tests/test_long_context"

echo "gpu-session: done in $((SECONDS - t0))s, status $rc; results in $out/session.tar.gz" |
    tee -a "$summary"
pack
exit "$rc"
