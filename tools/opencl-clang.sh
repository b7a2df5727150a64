# shellcheck shell=bash
# opencl-clang.sh -- sourced by check-ptx.sh and check-amdgcn.sh (and, for
# the program list, the joining and the verdict, check-intel.sh): the
# programs of build/tools/gpu-programs, joined from cl/ as program.c joins
# them, and the clang options that compile them as OpenCL C 1.2 for a GPU
# target (libclc's builtins for it linked in). Run from the repository root.

. tools/debian-packages.sh # apt_install

# opencl_clang_setup NAME LIBCLC -- installs libclc-14 when LIBCLC (the
# target's builtins) is missing, and sets clang_cl_opts, the options every
# target shares: NVIDIA's compiler takes `asm` in OpenCL C, clang wants GNU
# keywords for it; static, because C99's inline alone emits no body for a
# call left uninlined (always_inline, as NVIDIA's and AMD's compilers inline
# every function). NAME prefixes the messages.
opencl_clang_setup() {
    local name=$1 libclc=$2
    if [[ ! -f $libclc ]]; then
        apt_install "$name" libclc-14 || return 1
        [[ -f $libclc ]] || { echo "$name: libclc-14 installed, but no $libclc"; return 1; }
    fi
    local opencl_h
    opencl_h=$(clang -print-resource-dir)/include/opencl-c.h || return 1
    # shellcheck disable=SC2034 # read by the scripts that source this
    clang_cl_opts=(-x cl -cl-std=CL1.2 -O2 -S -Xclang -include -Xclang "$opencl_h"
                   -Xclang -mlink-builtin-bitcode -Xclang "$libclc" -fgnu-keywords
                   "-Dinline=static inline __attribute__((always_inline))")
}

# opencl_programs OUT FILTER [gpu-programs ARGS] -- OUT/programs.tsv, one
# line per distinct program whose label contains FILTER (a shrink can make
# two labels one program): "label<TAB>kernel<TAB>sources<TAB>options"
opencl_programs() {
    local out=$1 filter=$2
    shift 2
    build/tools/gpu-programs "$@" >"$out/programs.all" || return 1
    awk -F'\t' -v f="$filter" 'index($1, f) && !seen[$2 FS $3 FS $4]++' "$out/programs.all" \
        >"$out/programs.tsv"
}

# opencl_join SOURCES -- the program's source on stdout: each file of cl/
# in turn under a #line naming it
opencl_join() {
    local f
    for f in "$@"; do
        printf '#line 1 "%s"\n' "$f"
        cat "cl/$f"
        echo
    done
}

# opencl_verdict NAME OUT -- the stage's last line from OUT/report.txt and
# OUT/programs.tsv; fails when the report has a FAILED line, or when there
# was no program to compile (a FILTER that matches none)
opencl_verdict() {
    local name=$1 out=$2 failed total
    failed=$(grep -c '^FAILED' "$out/report.txt" || true)
    total=$(wc -l <"$out/programs.tsv")
    echo "$name: $total programs, $failed failures (report: $out/report.txt)"
    ((total > 0)) || echo "$name: no program's label contains the filter"
    ((failed == 0 && total > 0))
}
