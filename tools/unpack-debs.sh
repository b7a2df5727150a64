# shellcheck shell=bash
# unpack-debs.sh -- sourced by check-intel.sh and check-rusticl.sh: a
# compiler or an OpenCL runtime from Debian 12's packages, unpacked into a
# folder of the build, not installed (so no OpenCL ICD is registered and
# the other stages' OpenCL is untouched). Run from the repository root.

# unpack_debs NAME DIR PACKAGE... -- downloads the packages (Debian 12's,
# as root: apt's download sandbox user could not write there) into
# DIR.part/debs and unpacks them into DIR.part, renamed DIR when whole, so
# that an interrupted unpack is redone, not taken for the tool. Nothing is
# done when DIR exists. NAME prefixes the messages.
unpack_debs() {
    local name=$1 dir=$2 deb
    shift 2
    [[ ! -d $dir ]] || return 0
    rm -rf "$dir.part"
    mkdir -p "$dir.part/debs"
    download() { (cd "$dir.part/debs" && apt-get download -qq -o APT::Sandbox::User=root "$@"); }
    download "$@" || { apt-get update -qq && download "$@"; } ||
        { echo "$name: cannot download $*"; return 1; }
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
