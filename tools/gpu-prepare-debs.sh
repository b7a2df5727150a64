#!/usr/bin/env bash
# gpu-prepare-debs.sh FOLDER -- run here (Debian 12 with a package
# registry): downloads into FOLDER the .debs that building and testing attn
# needs, with their dependencies, for a GPU machine that has no registry.
# tools/gpu-check.sh --debs FOLDER unpacks them there under FOLDER/root
# (never into /). Assumed present on that machine, so not fetched: the base
# system (libc6, libstdc++6 ...), gcc with libc6-dev, and the GPU driver.
# Debian 12 binaries need glibc >= 2.34 there (2.36 for libarchive13, when
# the machine lacks its own); libraries the machine already has are used
# in preference to the unpacked ones.
set -euo pipefail

if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
    echo "Usage: $0 FOLDER   (then: tools/gpu-check.sh --debs FOLDER on the GPU machine)"
    [[ $# -eq 1 && ( $1 == -h || $1 == --help ) ]] && exit 0
    exit 2
fi
mkdir -p "$1"
folder=$(cd "$1" && pwd)

wanted=(cmake cmake-data make
        ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers opencl-headers
        libclblast1 libclblast-dev libcunit1 libcunit1-dev libcjson1 libcjson-dev zlib1g-dev
        pkg-config pkgconf pkgconf-bin libpkgconf3)
# Every Debian or Ubuntu system has these, and shadowing them would be
# harmful (the C library) or useless (dpkg, perl, init, procps).
base='^(libc6|libc-bin|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|dpkg|tar|debconf|perl|perl-base'
base+='|perl-modules-.*|libperl5\..*|usrmerge|usr-is-merged|init-system-helpers|procps|libproc2-0'
base+='|libsystemd0|libelogind0|libselinux1|libcrypt1|libtinfo6|libncursesw6|libdb5\.3|libgdbm.*'
base+='|libfile-find-rule-perl|libnumber-compare-perl|libtext-glob-perl|libcap2|libmd0)$'

export DEBIAN_FRONTEND=noninteractive
if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq
else
    echo "gpu-prepare-debs: not root: using the package lists as they are" >&2
fi

mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances "${wanted[@]}" |
    grep -v '^[ <]' | sort -u | grep -Ev "$base")
echo "gpu-prepare-debs: ${#closure[@]} packages: ${closure[*]}"

cd "$folder"
# A fresh set: no stale versions beside the new ones, and none of what
# gpu-check.sh unpacks or links here (it would travel with the folder).
rm -f ./*.deb
rm -rf root lib-missing bin icd
# apt-get download as root warns that _apt cannot write here; harmless.
apt-get download "${closure[@]}" 2> >(grep -v "unsandboxed as root" >&2)
n=$(ls -1 "$folder"/*.deb | wc -l)
echo "gpu-prepare-debs: $n .debs, $(du -sh "$folder" | cut -f1) in $folder"
