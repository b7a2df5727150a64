# checks.cmake -- compile and link flags of the reliability builds that
# tools/run-tests.sh makes: ATTN_SANITIZE puts -fsanitize=<list> on every
# target defined after this file (library, tools, tests, fuzzers); ATTN_FUZZ
# adds SanitizerCoverage so that libFuzzer sees the library's branches.

if(ATTN_SANITIZE)
  # -fno-sanitize-recover: UBSan stops at its first report, so a test with
  # undefined behaviour fails instead of printing and passing.
  add_compile_options(-fsanitize=${ATTN_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${ATTN_SANITIZE})
endif()

if(ATTN_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ATTN_FUZZ needs clang for libFuzzer: -DCMAKE_C_COMPILER=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
