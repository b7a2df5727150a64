#!/usr/bin/env bash
# check-install.sh -- installs build/ (tools/setup.sh made it) into a
# temporary prefix and checks it the way a user would: the files and the
# library's SONAME and links, that only attn_* symbols are exported, that
# attn.h and each attn/*.h it includes compile on their own (C11, pedantic,
# and as C++ when g++ is there), then builds examples/attention.c twice -- through find_package(attn) and
# through pkg-config -- and runs both (attention against the CPU reference
# on the default device), the installed attn-info, and that all four tools
# start from the prefix. Then the build options a user may choose (README
# "Installing"), each a library-only build: a static libattn.a
# (-DBUILD_SHARED_LIBS=OFF) installed and consumed through find_package and
# through pkg-config --static; and attn inside another project
# (add_subdirectory, tools/install/) configured -DATTN_WITH_CLBLAST=OFF,
# linking attn::attn: the example runs, and the CLBlast paths refuse
# (tools/install/no_clblast.c); that project's own install holds its
# program and libattn.so.N (nothing else of attn's), and the program runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
export POCL_CACHE_DIR="$ROOT/build/pocl-cache"
export ATTN_CACHE_DIR="$ROOT/build/attn-cache"

tmp=$(mktemp -d /tmp/attn-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install build --prefix "$prefix" > "$tmp/install.log"
echo "install: into $prefix:"
(cd "$prefix" && find . \( -type f -o -type l \) | sort | sed 's/^\./  /')

fail() { echo "install: FAILED: $*"; exit 1; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" build/CMakeCache.txt; }
libdir=$(cache_value CMAKE_INSTALL_LIBDIR) # lib, or lib64 where GNUInstallDirs says so
version=$(cache_value CMAKE_PROJECT_VERSION)
[[ -n "$libdir" && -n "$version" ]] || fail "build/CMakeCache.txt names no libdir or version"
[[ "$libdir" != /* ]] || fail "CMAKE_INSTALL_LIBDIR=$libdir is absolute: this check installs \
into a temporary prefix, which an absolute libdir leaves"
lib=$prefix/$libdir
headers=(attn.h attn/core.h attn/config.h attn/forward.h attn/decode.h attn/blas.h)
for f in "${headers[@]/#/include/}" "$libdir"/libattn.so "$libdir"/cmake/attn/attnConfig.cmake \
         "$libdir"/cmake/attn/attnConfigVersion.cmake "$libdir"/pkgconfig/attn.pc \
         share/doc/attn/LICENSE bin/attn-info bin/attn-bench bin/attn-tune bin/attn-weights; do
    [[ -e "$prefix/$f" ]] || fail "$f is missing"
done
soname=$(readelf -d "$lib/libattn.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ "$soname" == libattn.so.0.2 ]] || fail "SONAME is '$soname', not libattn.so.0.2"
[[ "$(readlink "$lib/libattn.so")" == libattn.so.0.2 ]] || fail "libattn.so does not link to libattn.so.0.2"
[[ -f "$lib/$(readlink "$lib/libattn.so.0.2")" ]] || fail "libattn.so.0.2 does not link to a file"
others=$(nm -D --defined-only "$lib/libattn.so" | awk '{print $3}' | grep -v '^attn_' || true)
[[ -z "$others" ]] || fail "symbols other than attn_* exported: $others"
echo "install: SONAME $soname, $(nm -D --defined-only "$lib/libattn.so" | wc -l) exported symbols, all attn_*"

for h in "${headers[@]}"; do
    echo "#include <$h>" > "$tmp/alone.c"
    cc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$prefix/include" "$tmp/alone.c" ||
        fail "$h does not compile on its own"
    if command -v g++ > /dev/null; then
        echo "#include <$h>" > "$tmp/alone.cpp"
        g++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$tmp/alone.cpp" ||
            fail "$h does not compile on its own as C++"
    fi
done
echo "install: attn.h and each header it includes compile on their own"

cmake -S examples -B "$tmp/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
      > "$tmp/cmake.log" || { cat "$tmp/cmake.log"; fail "find_package(attn)"; }
cmake --build "$tmp/with-cmake" > "$tmp/cmake-build.log" || { cat "$tmp/cmake-build.log"; fail "build with find_package"; }
echo -n "install: example through find_package(attn): "
"$tmp/with-cmake/attention"

export PKG_CONFIG_PATH=$lib/pkgconfig
[[ "$(pkg-config --modversion attn)" == "$version" ]] ||
    fail "attn.pc says version $(pkg-config --modversion attn), the project $version"
grep -qx 'License: Apache-2.0' "$lib/pkgconfig/attn.pc" || fail "attn.pc does not name the license"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -O2 examples/attention.c -o "$tmp/with-pkg-config" \
   $(pkg-config --cflags --libs attn) -lm -Wl,-rpath,"$(pkg-config --variable=libdir attn)"
echo -n "install: example through pkg-config ($(pkg-config --cflags --libs attn)): "
"$tmp/with-pkg-config"

"$prefix/bin/attn-info" > "$tmp/info.log" || { cat "$tmp/info.log"; fail "installed attn-info"; }
echo "install: installed attn-info runs ($(grep -c '^[* ] [0-9]*:[0-9]' "$tmp/info.log") devices)"
# Each tool starts from the prefix alone (its rpath finds libattn, not build/'s)
# and reports the installed library's version.
for t in attn-info attn-bench attn-tune attn-weights; do
    v=$(env -u LD_LIBRARY_PATH "$prefix/bin/$t" --version) || fail "installed $t --version"
    [[ "$v" == *"$(pkg-config --modversion attn)"* ]] || fail "installed $t --version says '$v'"
done
echo "install: attn-info, attn-bench, attn-tune and attn-weights installed and start"

# ---- the build options: library-only builds, as quick as they can be ----
lib_only=(-DCMAKE_BUILD_TYPE=Release -DATTN_BUILD_TESTS=OFF -DATTN_BUILD_TOOLS=OFF)
build_lib() { # build_lib NAME CMAKE-ARGS...: configure and build $tmp/NAME, logs kept on failure
    local name=$1
    shift
    cmake "$@" > "$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "configure $name"; }
    cmake --build "$tmp/$name" -j"$(nproc)" >> "$tmp/$name.log" 2>&1 ||
        { cat "$tmp/$name.log"; fail "build $name"; }
}

# A static libattn.a: installed, then the example through find_package and
# through pkg-config --static, neither needing a libattn.so at run time.
t0=$SECONDS
build_lib static -S . -B "$tmp/static" "${lib_only[@]}" -DBUILD_SHARED_LIBS=OFF
sprefix=$tmp/static-prefix
cmake --install "$tmp/static" --prefix "$sprefix" > "$tmp/static-install.log"
[[ -f $sprefix/$libdir/libattn.a ]] || fail "the static build installed no $libdir/libattn.a"
[[ ! -e $sprefix/$libdir/libattn.so ]] || fail "the static build installed a libattn.so"
build_lib static-example -S examples -B "$tmp/static-example" -DCMAKE_PREFIX_PATH="$sprefix" \
    -DCMAKE_BUILD_TYPE=Release
! ldd "$tmp/static-example/attention" | grep -q libattn || fail "static example links a libattn.so"
echo -n "install: static libattn.a through find_package(attn): "
"$tmp/static-example/attention"
spc=$(PKG_CONFIG_PATH=$sprefix/$libdir/pkgconfig pkg-config --static --cflags --libs attn)
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -O2 examples/attention.c -o "$tmp/static-pkg-config" $spc -lm
echo -n "install: static libattn.a through pkg-config --static ($spc): "
"$tmp/static-pkg-config"
# the same with an absolute CMAKE_INSTALL_LIBDIR: attn.pc cannot find the
# prefix from its own place, and names the one installed into
cmake -S . -B "$tmp/static" -DCMAKE_INSTALL_LIBDIR="$tmp/abs-lib" >> "$tmp/static.log" 2>&1 &&
    cmake --build "$tmp/static" -j"$(nproc)" >> "$tmp/static.log" 2>&1 &&
    cmake --install "$tmp/static" --prefix "$tmp/abs-prefix" > "$tmp/abs-install.log" ||
    { cat "$tmp/static.log"; fail "a build with an absolute CMAKE_INSTALL_LIBDIR"; }
apc=$(PKG_CONFIG_PATH=$tmp/abs-lib/pkgconfig pkg-config --static --cflags --libs attn)
[[ " $apc " == *" -I$tmp/abs-prefix/include "* ]] || fail "attn.pc with an absolute libdir: $apc"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -O2 examples/attention.c -o "$tmp/abs-pkg-config" $apc -lm
echo -n "install: an absolute CMAKE_INSTALL_LIBDIR through pkg-config ($apc): "
"$tmp/abs-pkg-config"

# attn inside another project, without CLBlast.
build_lib subdir -S tools/install -B "$tmp/subdir" -DATTN_SOURCE_DIR="$ROOT" \
    -DCMAKE_BUILD_TYPE=Release -DATTN_WITH_CLBLAST=OFF
grep -q "attn: without CLBlast" "$tmp/subdir.log" || fail "configure said nothing of CLBlast"
echo -n "install: add_subdirectory(attn), attn::attn, ATTN_WITH_CLBLAST=OFF: "
"$tmp/subdir/attention"
echo -n "install: "
"$tmp/subdir/no_clblast" || fail "the CLBlast paths of a build without CLBlast"
# the consumer's own install (ATTN_INSTALL off there): its program, and of
# attn only the run-time library the program loads, no development files
subprefix=$tmp/subdir-prefix
cmake --install "$tmp/subdir" --prefix "$subprefix" > "$tmp/subdir-install.log"
stray=$(cd "$subprefix" && find . \( -type f -o -type l \) | sort |
        grep -v -x -e ./bin/attention -e "./$libdir/libattn.so.0.2" \
            -e "./$libdir/libattn.so.$version" || true)
[[ -z "$stray" ]] || fail "the consumer's install put attn's development files in place: $stray"
[[ -e "$subprefix/$libdir/libattn.so.0.2" ]] || fail "the consumer's install has no libattn.so.0.2"
echo -n "install: add_subdirectory(attn): the consumer's installed program, beside libattn.so.0.2 \
and none of attn's development files: "
"$subprefix/bin/attention" || fail "the consumer's installed program"
echo "install: the build options took $((SECONDS - t0)) s"
