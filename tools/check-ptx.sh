#!/usr/bin/env bash
# check-ptx.sh -- the programs attn would build on an NVIDIA H200, compiled
# and assembled for NVIDIA GPUs on a machine without one.
#
# build/tools/gpu-programs lists them (the planner's own options on the
# H200's limits: tiled, flash, mma and their decode kernels, every storage
# type, D 64, 128 and 256, gpu-session.sh's sets, and the mma gate's
# fragment checks, with -DMMA_PTX=1 and -DATTN_GPU=1 as mma_gate.c and
# program.c add them there). Each is joined from cl/ as program.c joins
# it, compiled to PTX by clang (OpenCL C 1.2, target nvptx64, libclc's
# builtins) and assembled by NVIDIA's ptxas for sm_80 (A100) and sm_90
# (H100/H200). Any error fails the check: so an inline-PTX instruction
# that does not exist, takes other operand types or needs a newer GPU
# (mma.sync's shapes and types, cvt.rn.{f16,bf16}x2.f32, cvt.rna.tf32.f32,
# shfl.sync.bfly) is caught here, not in a GPU session.
#
# It also prints each entry kernel's registers, stack frame, spills and
# __local bytes per architecture (build/ptx/report.txt): an estimate of
# what NVIDIA's own OpenCL compiler would give, which this is not. Its
# front end is its own and it inlines every function, as
# always_inline makes clang do here; its PTX goes through the same ptxas.
# A stack frame without spills is a private array indexed at run time
# (kept in off-chip local memory, not registers: a loop over it that is not
# UNROLL) and fails the check, as does more __local than the H200's
# limits give a work-group or than the planner's estimate the plan was
# fitted by (lmem= in the label: a device with just that much would refuse
# it); spills
# (register pressure: the mma family in f32, and at D 256) are reported
# only.
#
# ptxas comes from Debian's non-free nvidia-cuda-toolkit package, unpacked
# (only /usr/bin/ptxas) into $ATTN_PTXAS_DIR (default /var/cache/attn-ptxas)
# without installing it or touching the system's apt sources: its package
# list is fetched into a private folder. Usage: check-ptx.sh [FILTER]
# (only programs whose label contains FILTER).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=build/ptx
ptxas_dir=${ATTN_PTXAS_DIR:-/var/cache/attn-ptxas}
ptxas=$ptxas_dir/usr/bin/ptxas
libclc=/usr/lib/clc/nvptx64--nvidiacl.bc
filter=${1:-}
rm -rf "$out"
mkdir -p "$out"

. tools/opencl-clang.sh
opencl_clang_setup check-ptx "$libclc" || exit 1

# fetch_ptxas -- unpacks ptxas from Debian's non-free archive
fetch_ptxas() {
    local apt=$out/apt codename
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    mkdir -p "$apt/lists/partial" "$apt/archives/partial"
    cat >"$apt/non-free.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $codename
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    local opts=(-o "Dir::Etc::sourcelist=$PWD/$apt/non-free.sources" -o Dir::Etc::sourceparts=-
                -o "Dir::State::Lists=$PWD/$apt/lists" -o "Dir::Cache::archives=$PWD/$apt/archives"
                -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o APT::Sandbox::User=root)
    apt-get "${opts[@]}" update -qq || return 1
    (cd "$apt" && apt-get "${opts[@]}" download -qq nvidia-cuda-toolkit) || return 1
    mkdir -p "$ptxas_dir"
    dpkg-deb --fsys-tarfile "$apt"/nvidia-cuda-toolkit_*.deb | tar -x -C "$ptxas_dir" ./usr/bin/ptxas ||
        return 1
    rm -rf "$apt"
}
if ! "$ptxas" --version >/dev/null 2>&1; then
    fetch_ptxas && "$ptxas" --version >/dev/null 2>&1 ||
        { echo "check-ptx: cannot fetch ptxas (Debian's non-free nvidia-cuda-toolkit)"; exit 1; }
fi
echo "check-ptx: $("$ptxas" --version | tail -1); $(clang --version | head -1)"

clang_opts=("${clang_cl_opts[@]}" -target nvptx64-unknown-nvidiacl -march=sm_80)
opencl_programs "$out" "$filter" tools/gpu-prefill-sets.txt || exit 1

# kernel_info LOG KERNEL -- "regs stack spill_st spill_ld smem" of the entry
kernel_info() {
    awk -v k="$2" '
        /Function properties for/ { props = $NF == k }
        props && /bytes stack frame/ { st = $1; ss = $5; sl = $9; props = 0 }
        /Compiling entry function/ { on = index($0, "'\''" k "'\''") > 0 }
        on && /Used [0-9]+ registers/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "Used") r = $(i + 1)
                if ($(i + 1) ~ /^bytes/ && $(i + 2) ~ /smem/) sm = $i
            }
            print r, st + 0, ss + 0, sl + 0, sm + 0; exit
        }' "$1"
}

# the __local a work-group may take on the limits the programs were planned on
smem_max=$(build/tools/gpu-programs --local-limit) ||
    { echo "check-ptx: gpu-programs --local-limit failed"; exit 1; }
n=0
{
    printf '%-4s %-100s %-5s %5s %6s %6s %6s %6s\n' "#" "program" "arch" "regs" "stack" "spill" "fill" "local"
    while IFS=$'\t' read -r label kernel sources options; do
        n=$((n + 1))
        src=$out/$n.cl
        # shellcheck disable=SC2086 # sources is a list of files
        opencl_join $sources >"$src"
        # shellcheck disable=SC2086 # options is a list of flags
        if ! clang "${clang_opts[@]}" $options "$src" -o "$out/$n.ptx" 2>"$out/$n.clang.log"; then
            echo "FAILED $n $label: clang"
            sed 's/^/    /' "$out/$n.clang.log" | head -20 || true
            continue
        fi
        for arch in sm_80 sm_90; do
            if ! "$ptxas" -arch=$arch -v "$out/$n.ptx" -o "$out/$n.$arch.cubin" >"$out/$n.$arch.log" 2>&1; then
                echo "FAILED $n $label: ptxas $arch"
                { grep -v '^ptxas info' "$out/$n.$arch.log" | sed 's/^/    /' | head -20; } || true
                continue
            fi
            if ! read -r regs stack spill fill smem < <(kernel_info "$out/$n.$arch.log" "$kernel"); then
                echo "FAILED $n $label: $arch: no ptxas figures for $kernel"
                continue
            fi
            printf '%-4s %-100s %-5s %5s %6s %6s %6s %6s\n' "$n" "$label" "$arch" \
                "$regs" "$stack" "$spill" "$fill" "$smem"
            # a stack frame without spills is a private array indexed at run
            # time: a loop over it that is not UNROLL (common.cl)
            if ((stack > 0 && spill == 0)); then
                echo "FAILED $n $label: $arch: a $stack-byte stack frame without spills"
            elif ((smem > smem_max)); then
                echo "FAILED $n $label: $arch: $smem bytes of __local, over $((smem_max / 1024)) KiB"
            elif [[ $label =~ ,lmem=([0-9]+)B ]] && ((smem > BASH_REMATCH[1])); then
                echo "FAILED $n $label: $arch: $smem bytes of __local, more than the planner's" \
                    "estimate (a device with that much less would refuse the plan)"
            fi
        done
        rm -f "$out/$n".*.cubin
    done <"$out/programs.tsv"
} | tee "$out/report.txt"

opencl_verdict check-ptx "$out"
