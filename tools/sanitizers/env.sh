# env.sh -- sourced by the check scripts: the sanitizer runtime options.
# ROOT must be the repository root.
#
# ASan's default fast unwinder: the leak suppressions (lsan.supp) are
# written to work with it, and the slow one made every in-process kernel
# compile 15-30 times slower.
# intercept_tls_get_addr=0: up to LLVM 16 the runtime's __tls_get_addr
# interceptor takes a dynamic TLS block whose start lies 16 bytes past a
# page boundary for a pre-2.25 glibc header and reads the words before it;
# PoCL's LLVM uses dynamic TLS, so by chance of malloc alignment LSan's
# tracer died at exit ("Tracer caught signal 11"), failing a test with no
# leak (seen once in CI, attn-weights --svg). Fixed upstream in LLVM 17
# ("Fix tls_get_addr handling for glibc >=2.25"); clang 14 needs the flag.
export ASAN_OPTIONS="intercept_tls_get_addr=0:detect_leaks=1:malloc_context_size=30:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$ROOT/tools/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="suppressions=$ROOT/tools/sanitizers/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
# Kernel binaries do not depend on how the host was compiled: share the
# main build's PoCL cache (made by tools/setup.sh's build and its tests),
# with the tests' generic work-group functions (tests/CMakeLists.txt).
export POCL_CACHE_DIR="$ROOT/build/pocl-cache" POCL_WORK_GROUP_SPECIALIZATION=0
