#!/usr/bin/env bash
# check-amdgcn.sh -- the programs attn would build on an AMD GPU, compiled
# for AMD's GPUs on a machine without one.
#
# build/tools/gpu-programs --amd lists them: the planner's own options on
# the limits ROCm's OpenCL reports (64 KiB of __local memory, work-groups of
# at most 256, 110 compute units), the tiled and flash families (flash with
# and without prefetch) and the tiled decode kernel, every storage type, D
# 64, 128 and 256, KV as the dtype and int8, contiguous and paged, with
# -DATTN_GPU=1 as program.c adds it on a GPU; not the mma family, which
# there is an emulation the planner never chooses. Each is joined from cl/
# as program.c joins it and compiled by clang (OpenCL C 1.2, libclc's
# builtins, every function inlined) to AMD GPU code for gfx90a (CDNA2:
# MI200, wave64) and gfx1030 (RDNA2, wave32: LLVM's default there). ROCm's
# OpenCL compiler is clang and the same AMDGPU back end (a newer LLVM), so
# what fails to compile here is likely to fail there too, and its
# figures are a near estimate, not a measurement.
#
# It prints each entry kernel's VGPRs (and AGPRs), SGPRs, scratch bytes a
# lane, spilled VGPRs and SGPRs, __local (LDS) bytes, the work-groups its
# LDS lets a compute unit hold (64 KiB a CU on CDNA, as much as one
# work-group may take: a tile that fills it runs alone) and LLVM's
# occupancy figure (waves a SIMD, from the registers and the LDS) per
# architecture to build/amdgcn/report.txt; a program that fails keeps its
# assembly there. It fails on a
# compile error, on scratch without spills (a private array indexed at run
# time, kept in off-chip memory: a loop over it that is not UNROLL, as
# check-ptx.sh fails a stack frame without spills) and on more than 64 KiB
# of LDS or than the planner's estimate (lmem= in the label); spills are
# reported only.
# Usage: check-amdgcn.sh [FILTER] (only programs whose label contains FILTER).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=build/amdgcn
libclc=/usr/lib/clc/amdgcn--amdhsa.bc
filter=${1:-}
rm -rf "$out"
mkdir -p "$out"

. tools/opencl-clang.sh
opencl_clang_setup check-amdgcn "$libclc" || exit 1
echo "check-amdgcn: $(clang --version | head -1)"
# -nogpulib: libclc's builtins instead of ROCm's device library (not here)
clang_opts=("${clang_cl_opts[@]}" -target amdgcn-unknown-amdhsa -nogpulib)
opencl_programs "$out" "$filter" --amd || exit 1

# kernel_info ASM KERNEL -- "vgprs agprs sgprs scratch vspill sspill lds
# occupancy" of the entry: the comments after its body and its HSA metadata
kernel_info() {
    awk -v k="$2" '
        $1 == ".size" { cur = $2; sub(/,$/, "", cur) }
        /^; Kernel info:/ { on = cur == k }
        on && /^; NumVgprs:/ { v = $3 }
        on && /^; NumAgprs:/ { a = $3 }
        on && /^; NumSgprs:/ { s = $3 }
        on && /^; ScratchSize:/ { sc = $3 }
        on && /^; LDSByteSize:/ { lds = $3 }
        on && /^; Occupancy:/ { occ = $3; on = 0; found = 1 }
        /^    \.name:/ { meta = $2 == k }
        meta && /^    \.vgpr_spill_count:/ { vs = $2 }
        meta && /^    \.sgpr_spill_count:/ { ss = $2 }
        END { if (found) print v, a + 0, s, sc, vs + 0, ss + 0, lds, occ; else exit 1 }' "$1"
}

archs="gfx90a gfx1030"
# the LDS a work-group may take on the limits the programs were planned on
lds_max=$(build/tools/gpu-programs --amd --local-limit) ||
    { echo "check-amdgcn: gpu-programs --amd --local-limit failed"; exit 1; }
n=0
{
    printf '%-4s %-90s %-7s %5s %5s %5s %7s %6s %6s %6s %5s %4s\n' "#" "program" "arch" "vgpr" \
        "agpr" "sgpr" "scratch" "vspill" "sspill" "lds" "wg/cu" "occ"
    while IFS=$'\t' read -r label kernel sources options; do
        n=$((n + 1))
        src=$out/$n.cl
        # shellcheck disable=SC2086 # sources is a list of files
        opencl_join $sources >"$src"
        for arch in $archs; do # both at once (CI has two cores), reported in order
            # shellcheck disable=SC2086 # options is a list of flags
            # (an if: set -e would end the job at a failed clang, writing no status)
            if clang "${clang_opts[@]}" -mcpu=$arch $options "$src" -o "$out/$n.$arch.s" \
                2>"$out/$n.$arch.log"; then echo 0; else echo 1; fi >"$out/$n.$arch.rc" &
        done
        wait
        for arch in $archs; do
            if [[ $(cat "$out/$n.$arch.rc") != 0 ]]; then
                echo "FAILED $n $label: clang $arch"
                sed 's/^/    /' "$out/$n.$arch.log" | head -20 || true
                continue
            fi
            if ! read -r vgpr agpr sgpr scratch vspill sspill lds occ < <(
                kernel_info "$out/$n.$arch.s" "$kernel"); then
                echo "FAILED $n $label: $arch: no figures for $kernel"
                continue
            fi
            per_cu=- # work-groups a compute unit's 64 KiB of LDS holds
            ((lds > 0)) && per_cu=$((65536 / lds))
            printf '%-4s %-90s %-7s %5s %5s %5s %7s %6s %6s %6s %5s %4s\n' "$n" "$label" "$arch" \
                "$vgpr" "$agpr" "$sgpr" "$scratch" "$vspill" "$sspill" "$lds" "$per_cu" "$occ"
            rm -f "$out/$n.$arch.rc"
            if ((scratch > 0 && vspill == 0 && sspill == 0)); then
                echo "FAILED $n $label: $arch: $scratch bytes of scratch without spills"
            elif ((lds > lds_max)); then
                echo "FAILED $n $label: $arch: $lds bytes of LDS, over $((lds_max / 1024)) KiB"
            elif [[ $label =~ ,lmem=([0-9]+)B ]] && ((lds > BASH_REMATCH[1])); then
                echo "FAILED $n $label: $arch: $lds bytes of LDS, more than the planner's estimate"
            else
                rm -f "$out/$n.$arch.s"
            fi
        done
    done <"$out/programs.tsv"
} | tee "$out/report.txt"

opencl_verdict check-amdgcn "$out"
