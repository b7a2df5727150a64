# shellcheck shell=bash
# debian-packages.sh -- sourced by the check stages that need Debian 12's
# packages beyond setup.sh's: installed (apt_install: opencl-clang.sh's
# libclc-14, check-rusticl.sh's libraries), or a compiler or an OpenCL
# runtime unpacked into a folder of the build, not installed (unpack_debs:
# check-intel.sh, check-rusticl.sh; so no OpenCL ICD is registered and the
# other stages' OpenCL is untouched). As root; run from the repository root.

# with_apt_lists CMD... -- CMD, and if it fails once more after apt-get
# update (a machine's package lists may be missing or stale)
with_apt_lists() { "$@" || { apt-get update -qq && "$@"; }; }

# apt_install NAME PACKAGE... -- installs the packages (no recommends, no
# questions); NAME prefixes the message when it cannot
apt_install() {
    local name=$1
    shift
    export DEBIAN_FRONTEND=noninteractive
    with_apt_lists apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
        { echo "$name: cannot install $*"; return 1; }
}

# unpack_debs NAME DIR PACKAGE... -- downloads the packages (apt's download
# sandbox user could not write there as root) into DIR.part/debs and
# unpacks them into DIR.part, renamed DIR when whole, so that an
# interrupted unpack is redone, not taken for the tool. Nothing is done
# when DIR exists. NAME prefixes the messages.
unpack_debs() {
    local name=$1 dir=$2 deb
    shift 2
    [[ ! -d $dir ]] || return 0
    rm -rf "$dir.part"
    mkdir -p "$dir.part/debs"
    download() { (cd "$dir.part/debs" && apt-get download -qq -o APT::Sandbox::User=root "$@"); }
    with_apt_lists download "$@" || { echo "$name: cannot download $*"; return 1; }
    for deb in "$dir.part"/debs/*.deb; do
        dpkg-deb -x "$deb" "$dir.part" || { echo "$name: cannot unpack $deb"; return 1; }
    done
    mv "$dir.part" "$dir"
}

# missing_libs FILE... -- the shared libraries the files need that this
# system lacks, on one line (empty when none)
missing_libs() {
    ldd "$@" 2>&1 | awk '/not found|No such file/ { print $1 }' | sort -u | tr '\n' ' ' || true
}
