#!/usr/bin/env bash
# check-intel.sh -- the programs attn would build on an Intel GPU, compiled
# by Intel's own OpenCL compiler on a machine without one.
#
# build/tools/gpu-programs --intel lists them: the planner's own options on
# the limits Intel's OpenCL runtime reports for an Arc A770 (64 KiB of
# __local memory, work-groups of 1024, 512 compute units), the tiled and
# flash families (flash with and without prefetch) and the tiled decode
# kernel, every storage type, D 64, 128 and 256, KV as the dtype and int8,
# contiguous and paged, with -DATTN_GPU=1 as program.c adds it on a GPU;
# --intel-pvc the same for a Data Center GPU Max 1100 (128 KiB of __local
# memory, 448 compute units: some larger tiles). Each is joined from cl/
# as program.c joins it and compiled by ocloc, the offline front of the
# compiler Intel's runtime builds with (IGC, Debian 12's intel-opencl-icd):
# the Arc's for acm-g10 (Xe-HPG: Arc A770) and tgllp (Xe-LP: the Iris Xe
# of 11th-generation laptops), the Max's for pvc (Xe-HPC, Ponte Vecchio,
# whose registers are 64 bytes). The packages are unpacked under
# build/intel-igc, not installed: no Intel ICD is registered, so the other
# stages' OpenCL is untouched. A program that fails here fails on a user's
# Intel GPU of the same compiler version; newer drivers may differ.
#
# It prints the entry kernel's SIMD width (lanes a hardware thread runs: 8,
# 16 or 32), the registers it was given (GRFs a thread), the
# registers IGC's warning says it spilled, its scratch (a thread) and
# private (a work-item) bytes and its __local (SLM) bytes to
# build/intel/report.txt; a program that fails keeps its build log there.
# It fails, in any kernel of the program, on a compile error, on scratch
# without spills or on private memory (a private array indexed at run
# time, kept in memory: a loop over it that is not UNROLL, as check-ptx.sh
# fails a stack frame without spills; on tgllp and pvc such an array goes
# to scratch, so in a kernel that also spills it passes unseen, which for
# the Max's own larger tiles is most of them) and on more
# than the SLM the device's limits give a work-group (64 KiB, the Max's
# 128), or, in the entry kernel, than the planner's estimate (lmem= in the
# label); spills are reported only.
# Usage: check-intel.sh [FILTER] (only programs whose label contains FILTER).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

out=build/intel
igc=build/intel-igc
filter=${1:-}
rm -rf "$out"
mkdir -p "$out"

# ocloc and the libraries it loads, unpacked once under $igc
. tools/debian-packages.sh
unpack_debs check-intel "$igc" intel-opencl-icd libigc1 libigdfcl1 libigdgmm12 \
    libopencl-clang14 libllvmspirvlib14 || exit 1
export LD_LIBRARY_PATH=$PWD/$igc/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ocloc=$igc/usr/bin/ocloc
# what the unpacked libraries need from the system: LLVM 14 (setup.sh's clang)
missing=$(missing_libs "$igc"/usr/lib/x86_64-linux-gnu/*.so* "$ocloc")
[[ -z $missing ]] || { echo "check-intel: ocloc or its libraries lack $missing (remove $igc" \
    "to download them again)"; exit 1; }
echo "check-intel: ocloc of intel-opencl-icd" \
    "$(dpkg-deb -f "$igc"/debs/intel-opencl-icd_*.deb Version)"

. tools/opencl-clang.sh
# each program, the devices it is compiled for and the SLM a work-group
# may take on the limits it was planned on (gpu_limits.h, through
# gpu-programs): an Arc's programs for Arc (acm-g10) and for Iris Xe
# (tgllp, whose plans at its limits are the Arc's: 64 KiB, and work-groups
# of 128), a Data Center GPU Max's (twice the SLM: larger tiles) for it
: >"$out/programs.devices"
for set in "--intel acm-g10 tgllp" "--intel-pvc pvc"; do
    read -r flag devices <<<"$set"
    opencl_programs "$out" "$filter" "$flag" || exit 1
    slm_max=$(build/tools/gpu-programs "$flag" --local-limit) ||
        { echo "check-intel: gpu-programs $flag --local-limit failed"; exit 1; }
    awk -v d="$devices" -v m="$slm_max" '{ print $0 "\t" d "\t" m }' "$out/programs.tsv" \
        >>"$out/programs.devices"
done
cut -f1-4 "$out/programs.devices" >"$out/programs.tsv" # what opencl_verdict counts

# kernel_info DUMP -- "kernel simd grf scratch private slm" for each kernel
# of the program, from the patch tokens ocloc disasm wrote to DUMP/PTM.txt
# (IGC's patch_list.h and patch_shared.h: 15 the local surface, 18 and 55
# the scratch a thread of slots 0 and 1, 23 the execution environment, 38
# stateless private memory), each token a line of byte values
kernel_info() {
    awk '
        function hex(s, i, v) {
            for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
            return v
        }
        function word(i, j, v) { for (j = 4; j >= 1; j--) v = v * 256 + hex(b[4 * i + j]); return v }
        $1 == "KernelName" { k[++nk] = $2 }
        $2 == "Token" { tok = $3 }
        $1 == "Hex" && nk {
            n = split($0, b, " ")  # b[1] is "Hex"
            for (i = 1; i < n; i++) b[i] = b[i + 1]
            if (tok == 15) slm[nk] = word(1)
            if (tok == 18 || tok == 55) scratch[nk] += word(1)
            if (tok == 23) { simd[nk] = word(3); grf[nk] = word(20) }
            if (tok == 38) priv[nk] = word(3)
        }
        END {
            for (i = 1; i <= nk; i++)
                if (simd[i]) print k[i], simd[i], grf[i], scratch[i] + 0, priv[i] + 0, slm[i] + 0
                else exit 1
            exit nk == 0
        }' "$1/PTM.txt"
}

# compile N DEV OPTIONS -- program N (OUT/N.cl) built for DEV and its
# patch tokens dumped; OUT/N.DEV.rc says whether that went well, .log how
# (an if: set -e would end the job at a failed build, writing no status)
compile() {
    local n=$1 dev=$2 options=$3
    if "$ocloc" compile -file "$out/$n.cl" -device "$dev" -options "$options" \
        -output "$n.$dev" -output_no_suffix -out_dir "$out" >"$out/$n.$dev.log" 2>&1 &&
        "$ocloc" disasm -file "$out/$n.$dev" -device "$dev" -dump "$out/$n.$dev.dump" \
            >>"$out/$n.$dev.log" 2>&1; then echo 0; else echo 1; fi >"$out/$n.$dev.rc"
}
export -f compile
export ocloc out

# every build first, two at a time (CI has two cores; a Max's program has
# one device), then the report in order
echo "check-intel: $(wc -l <"$out/programs.tsv") programs, compiling"
n=0
while IFS=$'\t' read -r label kernel sources options devices _; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # sources is a list of files
    opencl_join $sources >"$out/$n.cl"
    for dev in $devices; do printf '%s\0%s\0%s\0' "$n" "$dev" "$options"; done
done <"$out/programs.devices" | xargs -0 -r -n 3 -P 2 bash -c 'compile "$@"' compile ||
    true # a job that died wrote no .rc: the report says FAILED for it

n=0
{
    printf '%-4s %-90s %-8s %4s %4s %6s %7s %7s %6s\n' "#" "program" "device" "simd" "grf" \
        "spills" "scratch" "private" "slm"
    while IFS=$'\t' read -r label kernel sources options devices slm_max; do
        n=$((n + 1))
        # (read collapses an empty field, which would leave this one empty)
        [[ -n $devices ]] || echo "FAILED $n $label: no device to build for"
        for dev in $devices; do
            if [[ $(cat "$out/$n.$dev.rc" 2>/dev/null) != 0 ]]; then
                echo "FAILED $n $label: ocloc $dev"
                grep -v '^$' "$out/$n.$dev.log" | sed 's/^/    /' | head -20 || true
                continue
            fi
            if ! kernel_info "$out/$n.$dev.dump" >"$out/$n.$dev.kernels" ||
                ! grep -q "^$kernel " "$out/$n.$dev.kernels"; then
                echo "FAILED $n $label: $dev: no figures for $kernel"
                continue
            fi
            ok=1
            # every kernel of the program checked (a decode program also has
            # attn_decode_combine), the entry kernel's figures reported
            while read -r name simd grf scratch private slm; do
                # "warning: kernel K  compiled SIMD8 allocated 128 regs and spilled around 131"
                spills=$(sed -n "s/.*kernel $name  *compiled.*spilled around \([0-9]*\).*/\1/p" \
                    "$out/$n.$dev.log" | head -1)
                spills=${spills:-0}
                if [[ $name == "$kernel" ]]; then
                    printf '%-4s %-90s %-8s %4s %4s %6s %7s %7s %6s\n' "$n" "$label" "$dev" \
                        "$simd" "$grf" "$spills" "$scratch" "$private" "$slm"
                fi
                if ((private > 0 || (scratch > 0 && spills == 0))); then
                    echo "FAILED $n $label: $dev: $name: $scratch bytes of scratch without" \
                        "spills, $private of private memory a work-item"
                    ok=0
                elif ((slm > slm_max)); then
                    echo "FAILED $n $label: $dev: $name: $slm bytes of SLM, over $((slm_max / 1024))" \
                        "KiB"
                    ok=0
                elif [[ $name == "$kernel" && $label =~ ,lmem=([0-9]+)B ]] && ((slm > BASH_REMATCH[1])); then
                    echo "FAILED $n $label: $dev: $name: $slm bytes of SLM, more than the" \
                        "planner's estimate"
                    ok=0
                fi
            done <"$out/$n.$dev.kernels"
            rm -rf "$out/$n.$dev.rc" "$out/$n.$dev" "$out/$n.$dev.spv" "$out/$n.$dev.dump" \
                "$out/$n.$dev.kernels"
            if ((ok)); then rm -f "$out/$n.$dev.log"; fi
        done
    done <"$out/programs.devices"
} | tee "$out/report.txt"

opencl_verdict check-intel "$out"
