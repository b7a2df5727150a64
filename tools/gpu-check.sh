#!/usr/bin/env bash
# gpu-check.sh -- builds and checks attn on a GPU machine that may have no
# package registry: unpacks the .debs from tools/gpu-prepare-debs.sh under
# FOLDER/root (never into /), registers the NVIDIA OpenCL driver when no ICD
# names it, builds into build-gpu/, lists the devices, runs the tests and
# the benchmark (text, then JSON saved to $OUT/bench-gpu.json) on the chosen
# platform, and tools/compare-torch.py where python3 imports torch (JSON in
# $OUT/compare-torch.json), and ends with a summary. Exit status 0 only if
# every step passed.
set -uo pipefail
start=$(pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

usage() {
    cat <<EOF
Usage: tools/gpu-check.sh [--debs FOLDER] [--platform SEL] [--no-tests] [--no-bench]
                          [--prefer-debs]
  --debs FOLDER   .debs from tools/gpu-prepare-debs.sh: unpacked under FOLDER/root
                  and used for whatever this machine lacks (cmake, OpenCL loader
                  and headers, cJSON, CUnit, CLBlast)
  --platform SEL  the attn device selector for tests and benchmark (default nvidia)
  --no-tests      skip ctest
  --no-bench      skip attn-bench
  --prefer-debs   use the unpacked cmake and every unpacked library even where
                  the machine has its own (to test the .debs on a full machine)
Logs go to \$OUT/gpu-check.log and the JSON results to \$OUT/bench-gpu.json when
OUT is set, else to build-gpu/.
EOF
}

debs="" sel="nvidia" run_tests=1 run_bench=1 prefer=0
while (($#)); do
    case $1 in
    --debs) debs=${2:?--debs needs a folder}; shift 2 ;;
    --debs=*) debs=${1#*=}; shift ;;
    --platform) sel=${2:?--platform needs a selector}; shift 2 ;;
    --platform=*) sel=${1#*=}; shift ;;
    --no-tests) run_tests=0; shift ;;
    --no-bench) run_bench=0; shift ;;
    --prefer-debs) prefer=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

build=$repo/build-gpu
outdir=${OUT:-$build}
mkdir -p "$build" "$outdir"
log=$outdir/gpu-check.log
exec > >(tee "$log") 2>&1
tee_pid=$!

declare -a summary
note() { summary+=("$(printf '%-22s %s' "$1" "$2")"); }
step() { echo; echo "==== gpu-check: $* ($(date +%T))"; }
finish() {
    echo
    echo "==== gpu-check summary (selector \"$sel\")"
    printf '  %s\n' "${summary[@]}"
    echo "  log: $log"
    [[ $1 -eq 0 ]] && echo "gpu-check: PASSED" || echo "gpu-check: FAILED"
    exec >&- 2>&-
    wait "$tee_pid" 2>/dev/null # let tee write the last lines
    exit "$1"
}
failed=0

# ---- 1. the unpacked toolchain and libraries ----
version_ge() { [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1) == "$2" ]]; }
cmake_ok() {
    local v
    v=$(cmake --version 2>/dev/null | awk 'NR==1 {print $3}') || return 1
    [[ -n $v ]] && version_ge "$v" 3.25
}

if [[ -n $debs ]]; then
    step "unpacking $debs"
    [[ $debs == /* ]] || debs=$start/$debs # relative to where we were started
    debs=$(cd "$debs" && pwd) || { note unpack "FAILED: no folder $debs"; finish 1; }
    root=$debs/root
    shopt -s nullglob
    files=("$debs"/*.deb)
    if ((${#files[@]} == 0)); then note unpack "FAILED: no .deb in $debs"; finish 1; fi
    stamp=$root/.unpacked
    if [[ ! -f $stamp || -n $(find "$debs" -maxdepth 1 -name '*.deb' -newer "$stamp") ]]; then
        rm -rf "$root"
        mkdir -p "$root"
        for f in "${files[@]}"; do dpkg -x "$f" "$root" || { note unpack "FAILED: $f"; finish 1; }; done
        # CMake package configs and .pc files name /usr: point them here.
        find "$root" \( -path '*/cmake/*' -name '*.cmake' -o -name '*.pc' \) -type f -print0 |
            xargs -0 -r sed -i -e "s#\"/usr/#\"$root/usr/#g" -e "s#\"/usr\"#\"$root/usr\"#g" \
                -e "s#^\([A-Za-z_]*\)=/usr\(/\|\$\)#\1=$root/usr\2#"
        touch "$stamp"
    fi
    libdirs=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
    # Only the libraries this machine lacks go on the run-time path, so the
    # system's own (newer) ones are never shadowed.
    missing=$debs/lib-missing
    rm -rf "$missing"
    mkdir -p "$missing"
    have=""
    ((prefer)) || have=$(ldconfig -p 2>/dev/null | awk 'NR > 1 {print $1}' | sort -u)
    for d in "$root/usr/lib/x86_64-linux-gnu" "$root/lib/x86_64-linux-gnu"; do
        [[ -d $d ]] || continue
        for f in "$d"/lib*.so.*; do
            [[ -f $f && ! -L $f ]] || continue
            # link each library under the name programs ask for, its soname
            n=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
            [[ -n $n ]] || n=$(basename "$f")
            grep -qxF "$n" <<<"$have" || ln -sf "$f" "$missing/$n"
        done
    done
    export LD_LIBRARY_PATH=$missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LIBRARY_PATH=${LIBRARY_PATH:+$LIBRARY_PATH:}$libdirs
    export CPATH=${CPATH:+$CPATH:}$root/usr/include
    export PKG_CONFIG_PATH=$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export CMAKE_PREFIX_PATH=$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
    # The unpacked tools come after the system's, except cmake when the
    # system has none as new as 3.25 (it finds its modules beside itself,
    # ../share/cmake-3.25, through the real path of the binary).
    if ((prefer)) || ! cmake_ok; then
        mkdir -p "$debs/bin"
        for t in cmake ctest cpack; do ln -sf "$root/usr/bin/$t" "$debs/bin/$t"; done
        export PATH=$debs/bin:$PATH
    fi
    export PATH=$PATH:$root/usr/bin
    note unpack "ok: ${#files[@]} .debs, $(ls "$missing" | wc -l) libraries used from them"
fi
cmake_ok || { note cmake "FAILED: no cmake >= 3.25 (give --debs)"; finish 1; }
echo "cmake: $(command -v cmake) ($(cmake --version | head -1))"
command -v cc >/dev/null || command -v gcc >/dev/null ||
    { note compiler "FAILED: no C compiler (gcc and libc6-dev are assumed present)"; finish 1; }

# ---- 2. the OpenCL driver ----
step "OpenCL ICDs"
vendors=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
# an ICD naming NVIDIA's library counts only where that library is found:
# a path that exists, or a name the loader resolves (ldconfig or
# LD_LIBRARY_PATH)
icd_found() {
    local f lib d
    for f in "$vendors"/*.icd; do
        [[ -f $f ]] && grep -qi nvidia "$f" || continue
        lib=$(head -1 "$f")
        if [[ $lib == /* ]]; then
            [[ -e $lib ]] && return 0
        else # ldconfig -p's lines: "<tab>NAME (libc6,x86-64) => PATH"
            ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l {f = 1} END {exit !f}' && return 0
            local ld=${LD_LIBRARY_PATH:-}
            for d in ${ld//:/ }; do [[ -e $d/$lib ]] && return 0; done
        fi
    done
    return 1
}
if icd_found; then
    note icd "ok: NVIDIA registered in $vendors"
else
    lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1 / {print $NF; exit}')
    for d in /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib64 /usr/lib; do
        [[ -z $lib && -e $d/libnvidia-opencl.so.1 ]] && lib=$d/libnvidia-opencl.so.1
    done
    if [[ -n $lib ]]; then
        icd=${debs:-$build}/icd
        mkdir -p "$icd"
        cp -f "$vendors"/*.icd "$icd"/ 2>/dev/null || true
        echo "$lib" >"$icd/nvidia.icd"
        export OCL_ICD_VENDORS=$icd
        # its own dependencies (libcuda.so.1 ...) live beside it
        export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$lib")
        note icd "registered $lib in $icd"
    elif [[ ${sel,,} == *nvidia* ]]; then
        note icd "WARNING: no NVIDIA ICD registered and no libnvidia-opencl.so.1 found"
        # what the next session needs to register it by hand
        echo "ICD files:"; head -n 3 "$vendors"/*.icd 2>&1 | sed 's/^/  /'
        echo "OpenCL libraries the loader knows:"
        ldconfig -p 2>/dev/null | grep -i -e opencl -e libcuda | sed 's/^/  /'
        echo "libnvidia-opencl* on this file system (20 s at most):"
        timeout 20 find / -xdev -name 'libnvidia-opencl*' 2>/dev/null | head -20 | sed 's/^/  /'

    else
        note icd "ok: no NVIDIA driver here; using $vendors"
    fi
fi
echo "OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-(unset)}; ICDs:"
for f in "${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}"/*.icd; do [[ -f $f ]] && echo "  $f: $(<"$f")"; done

# what the steps after this script need of its environment (tools/gpu-session.sh
# sources it): the unpacked tools and libraries, the registered ICD
for v in PATH LD_LIBRARY_PATH LIBRARY_PATH CPATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH OCL_ICD_VENDORS; do
    [[ -n ${!v:-} ]] && printf 'export %s=%q\n' "$v" "${!v}"
done >"$build/gpu-env.sh"

# ---- 3. build ----
step "configure and build into build-gpu/"
# CLBlast required: its paths are part of what this check covers. The
# library, the tools and the mma family's tests first: one test that fails
# to compile under another compiler must not cost the session its
# measurements; the rest then keeps going past an error (-k).
key_targets=(attn attn-bench attn-info attn-tune test_mma_ops test_mma_gate)
if cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DATTN_WITH_CLBLAST=ON &&
    cmake --build "$build" -j"$(nproc)" --target "${key_targets[@]}"; then
    keep_going=(-- -k) # make's; ninja's takes a count
    grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt" && keep_going=(-- -k 0)
    if cmake --build "$build" -j"$(nproc)" "${keep_going[@]}"; then
        note build ok
    else
        note build "FAILED in part: ${key_targets[*]} built; see the log for the others"
        failed=1
    fi
else
    note build FAILED
    finish 1
fi

# ---- 4. devices ----
step "attn-info --device $sel"
if "$build/tools/attn-info" --device "$sel"; then note attn-info ok; else note attn-info FAILED; failed=1; fi

export ATTN_TEST_DEVICE=$sel ATTN_DEVICE=$sel

# ---- 5. tests ----
if ((run_tests)); then
    step "ctest (ATTN_TEST_DEVICE=$sel)"
    ctest --test-dir "$build" --output-on-failure -j4 --timeout 300 | tee "$build/ctest.log"
    rc=${PIPESTATUS[0]}
    res=$(grep -E 'tests passed|tests failed' "$build/ctest.log" | tail -1)
    if ((rc == 0)); then note ctest "ok: ${res:-passed}"; else note ctest "FAILED: ${res:-rc $rc}"; failed=1; fi
fi

# ---- 6. benchmark ----
if ((run_bench)); then
    step "attn-bench --device $sel --check --format text"
    "$build/tools/attn-bench" --device "$sel" --check --format text
    rc=$?
    if ((rc == 0)); then note "bench text" ok; else note "bench text" "FAILED (exit $rc)"; failed=1; fi
    step "attn-bench --device $sel --check --format json"
    json=$outdir/bench-gpu.json
    "$build/tools/attn-bench" --device "$sel" --check --format json >"$json"
    rc=$?
    if ((rc == 0)); then note "bench json" "ok: $json"; else note "bench json" "FAILED (exit $rc): $json"; failed=1; fi
    step "attn-bench --device $sel --decode --splits auto,1,4,16 --check"
    "$build/tools/attn-bench" --device "$sel" --decode --splits auto,1,4,16 --check --format text
    rc=$?
    if ((rc == 0)); then note "bench decode" ok; else note "bench decode" "FAILED (exit $rc)"; failed=1; fi
    # attn against PyTorch's SDPA backends on the same GPU (issue 11's exercise 3)
    # (torch on CUDA where it has it: the tool's default)
    # (Debian's python3-torch installs for /usr/bin/python3, which a pyenv
    # or venv python3 first on PATH does not see)
    torch_py=""
    for py in python3 /usr/bin/python3; do
        if "$py" -c 'import torch' 2>/dev/null; then torch_py=$py; break; fi
    done
    if [[ -n $torch_py ]]; then
        step "compare-torch.py --dtype f16,f32 ($torch_py)"
        "$torch_py" tools/compare-torch.py --lib "$build/libattn.so" --device "$sel" --dtype f16,f32 \
            --bench 5 --json "$outdir/compare-torch.json"
        rc=$?
        if ((rc == 0)); then note torch ok; else note torch "FAILED (exit $rc)"; failed=1; fi
    else
        note torch "skipped: neither python3 nor /usr/bin/python3 imports torch"
    fi
fi

finish "$failed"
