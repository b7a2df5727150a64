#!/usr/bin/env bash
# setup.sh -- makes a fresh Debian 12 ready to build attn and builds it:
# installs the packages that are missing (as root), configures build/ once
# (Release) and builds it (ATTN_WERROR: see below). Safe to run again: it
# only does what is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libclblast-dev
          libcunit1-dev libcjson-dev zlib1g-dev cmake oclgrind pkg-config gcc make
          clang libclang-rt-14-dev valgrind) # the last three: sanitizers, libFuzzer, Memcheck
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup: missing packages need root: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
fi
# ATTN_SETUP_TESTS=1 (run-tests.sh): PyTorch too, for tools/compare-torch.py's
# tests (about 100 s to install; the main job does not need it). Optional:
# where it does not install, those tests are skipped and say why.
if [[ ${ATTN_SETUP_TESTS:-0} == 1 && $(id -u) -eq 0 ]] &&
    ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
    echo "setup: installing python3-torch (for compare-torch.py's tests)"
    export DEBIAN_FRONTEND=noninteractive
    { ((${#missing[@]})) || apt-get update; } &&
        apt-get install -y --no-install-recommends python3-torch ||
        echo "setup: python3-torch did not install; compare-torch.py's tests will be skipped" >&2
fi

# ATTN_WERROR=ON|OFF in the environment (run-tests.sh sets ON) sets the
# build's -Werror option, also on a build/ configured before.
if [[ ! -f build/CMakeCache.txt ]]; then
    # CLBlast is installed above: required, so that its paths are always tested
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTN_WITH_CLBLAST=ON \
          ${ATTN_WERROR:+-DATTN_WERROR=$ATTN_WERROR}
elif [[ -n ${ATTN_WERROR:-} ]]; then
    cmake -S . -B build -DATTN_WERROR="$ATTN_WERROR" > /dev/null
fi
cmake --build build -j"$(nproc)"
