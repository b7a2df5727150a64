#!/usr/bin/env bash
# check-rusticl.sh -- suites of the test matrix on a second OpenCL
# implementation: Mesa's rusticl (Debian 12's mesa-opencl-icd, Mesa 22.3)
# on llvmpipe, its software device. PoCL runs every other stage; rusticl
# compiles OpenCL C another way (clang to SPIR-V, then Mesa's NIR, the path
# its AMD and Intel GPU drivers share) and runs a work-group the way a GPU
# does, lanes of a SIMD register stepping together between barriers. A
# kernel or a host call that is right only on PoCL fails here.
#
# The suites: the GPU plans of tests/test_gpu_plans.c (every family an
# H200, an AMD and an Intel GPU would run that fits llvmpipe's 32 KiB of
# __local memory), the mma family's emulation and its gate, the API's
# validation, errors and contexts; and the work-group families' part of
# every kernel at tiny sizes (tests/oclgrind_kernels.c, without Oclgrind).
# Not the vector family's tests there: it is PoCL's default, and each of
# its programs takes about 30 s to build here. Not test_cache: Mesa 22.3
# aborts the process (a Rust panic, "unknown version" in rusticl's
# program.rs) on a program binary it cannot read, where OpenCL asks for
# CL_INVALID_BINARY, and test_cache hands it one on purpose. Not the long
# suites (test_forward, test_decode, ...): llvmpipe builds each program
# several times slower than PoCL, and they would take an hour here.
#
# The runtime is unpacked under build/rusticl, not installed, and an ICD
# file of its own (build/rusticl/vendors) is the only one the suites see
# (OCL_ICD_VENDORS), so no ICD is registered. What it loads from the
# system is installed with apt-get where missing (root, Debian's archive):
# LLVM 15's libraries, libdrm, and libclc's SPIR-V library
# (spirv64-mesa3d-.spv) from libclc-14, which the ptx and amdgcn stages
# install too (libclc-15, the package's own, conflicts with it: installing
# libclc-14 removes it, as those stages do). Usage:
# check-rusticl.sh [CTEST_REGEX] (default: the suites above; a regex runs
# only the ctest suites it matches).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=build/rusticl
suites=${1:-'^(test_gpu_plans|test_mma|test_mma_gate|test_validation|test_errors|test_context)$'}

. tools/debian-packages.sh
unpack_debs check-rusticl "$dir" mesa-opencl-icd || exit 1
lib=$PWD/$dir/usr/lib/x86_64-linux-gnu/libRusticlOpenCL.so.1
[[ -f $lib ]] || { echo "check-rusticl: the package has no $lib (remove $dir to download it" \
    "again)"; exit 1; }
# what rusticl loads from the system: LLVM 15, its clang and SPIR-V
# translator, libdrm (mesa-opencl-icd's Depends, less libclc-15), and
# libclc's SPIR-V library
deps="libllvm15 libclang-cpp15 libllvmspirvlib15 libdrm2 libdrm-amdgpu1 libdrm-nouveau2
      libdrm-radeon1 libelf1 libsensors5 libzstd1 libexpat1 libclc-14"
if [[ -n $(missing_libs "$lib") || ! -f /usr/lib/clc/spirv64-mesa3d-.spv ]]; then
    # shellcheck disable=SC2086 # deps is a list
    apt_install check-rusticl $deps || exit 1
fi
missing=$(missing_libs "$lib")
[[ -z $missing ]] || { echo "check-rusticl: rusticl lacks $missing"; exit 1; }

mkdir -p "$dir/vendors"
echo "$lib" >"$dir/vendors/rusticl.icd"
export OCL_ICD_VENDORS=$PWD/$dir/vendors RUSTICL_ENABLE=llvmpipe
unset ATTN_TEST_DEVICE ATTN_DEVICE
# attn's and Mesa's caches of their own, empty: every program built by
# rusticl in this run
export ATTN_CACHE_DIR=$PWD/$dir/attn-cache MESA_SHADER_CACHE_DIR=$PWD/$dir/mesa-cache
rm -rf "$ATTN_CACHE_DIR" "$MESA_SHADER_CACHE_DIR"
echo "check-rusticl: mesa-opencl-icd $(dpkg-deb -f "$dir"/debs/mesa-opencl-icd_*.deb Version)"
build/tools/attn-info | grep -F '* ' | grep -q 'rusticl / llvmpipe' ||
    { build/tools/attn-info; echo "check-rusticl: rusticl's llvmpipe is not the device"; exit 1; }
# oclgrind_kernels is not a ctest suite (check-oclgrind.sh runs it under
# oclgrind): its work-group families' tests (the vector family's, PoCL's
# default, take about 30 s a program here), beside the suites (two cores)
failed=0 kernels=
if [[ -z ${1:-} ]]; then
    gpu_tests=test_tiled,test_flash,test_mma,test_decode_tiled,test_decode_mma,test_decode_int8
    ATTN_TEST_FILTER=$gpu_tests timeout 900 build/tests/oclgrind_kernels \
        >"$dir/oclgrind_kernels.log" 2>&1 &
    kernels=$!
fi
# not test_context's test_threads: with every program built cold, Mesa
# 22.3's rusticl intermittently computes a forward wrong when four threads
# share a context, once crashing after it (2 of 10 cold runs of
# test_context, 0 of 10 warm; the stage runs cold). attn serializes its
# calls on a context under one mutex over an in-order queue, and rusticl
# takes buffers released while in use and kernel arguments reset after an
# enqueue right from one thread (measured); PoCL runs the test in the main
# stage and ThreadSanitizer in the tsan stage.
echo "check-rusticl: test_context's test_threads left out (README: rusticl)"
ATTN_TEST_SKIP=test_threads ctest --test-dir build --output-on-failure -j1 --timeout 900 \
    --no-tests=error -R "$suites" || failed=1
if [[ -n $kernels ]]; then
    echo "check-rusticl: oclgrind_kernels ($gpu_tests)"
    if wait "$kernels"; then
        tail -4 "$dir/oclgrind_kernels.log"
    else
        rc=$?
        tail -40 "$dir/oclgrind_kernels.log"
        echo "check-rusticl: oclgrind_kernels FAILED (exit status $rc; 124: past 900 s)"
        failed=1
    fi
fi
exit "$failed"
