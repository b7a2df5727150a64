# clblast.cmake -- ATTN_WITH_CLBLAST: whether the CLBlast paths
# (attn_forward_materialized, attn_attention_weights, the attention layer)
# are built against CLBlast. AUTO (the default): when CLBlast is found; ON:
# a configure error without it; OFF: never. Without CLBlast those functions
# validate their arguments and return ATTN_ERROR_UNSUPPORTED, and the suites
# that need them are listed by ctest as skipped (tests/CMakeLists.txt).
#
# CLBlast is found by header and library, not by its CMake config, which
# names absolute paths under /usr (tools/gpu-check.sh unpacks .debs
# elsewhere; CMAKE_PREFIX_PATH applies). Sets ATTN_HAVE_CLBLAST (0 or 1) and
# the INTERFACE target attn_clblast (empty without CLBlast).

set(ATTN_WITH_CLBLAST AUTO CACHE STRING "Build the CLBlast paths: AUTO (when found), ON or OFF")
set_property(CACHE ATTN_WITH_CLBLAST PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${ATTN_WITH_CLBLAST}" attn_want_clblast)
# CMake's truth would take any other word ("maybe") as ON without a word
if(NOT attn_want_clblast MATCHES "^(AUTO|ON|OFF|YES|NO|TRUE|FALSE|Y|N|1|0)$")
  message(FATAL_ERROR "attn: ATTN_WITH_CLBLAST=${ATTN_WITH_CLBLAST}: want AUTO, ON or OFF")
endif()

set(ATTN_HAVE_CLBLAST 0)
add_library(attn_clblast INTERFACE)
if(attn_want_clblast STREQUAL "AUTO" OR ATTN_WITH_CLBLAST)
  find_path(ATTN_CLBLAST_INCLUDE_DIR clblast_c.h)
  find_library(ATTN_CLBLAST_LIBRARY NAMES clblast)
  if(ATTN_CLBLAST_INCLUDE_DIR AND ATTN_CLBLAST_LIBRARY)
    set(ATTN_HAVE_CLBLAST 1)
    target_include_directories(attn_clblast INTERFACE ${ATTN_CLBLAST_INCLUDE_DIR})
    target_link_libraries(attn_clblast INTERFACE ${ATTN_CLBLAST_LIBRARY})
    message(STATUS "attn: with CLBlast (${ATTN_CLBLAST_LIBRARY}): materialized attention, "
                   "attention weights and the layer")
  elseif(attn_want_clblast STREQUAL "AUTO")
    message(STATUS "attn: CLBlast not found (Debian: libclblast-dev): building without it; "
                   "attn_forward_materialized, attn_attention_weights and attn_layer_create "
                   "will return ATTN_ERROR_UNSUPPORTED")
  else()
    message(FATAL_ERROR "attn: ATTN_WITH_CLBLAST=${ATTN_WITH_CLBLAST} but CLBlast was not found "
                        "(clblast_c.h: ${ATTN_CLBLAST_INCLUDE_DIR}, libclblast: "
                        "${ATTN_CLBLAST_LIBRARY}); install libclblast-dev, point "
                        "CMAKE_PREFIX_PATH at it, or configure with -DATTN_WITH_CLBLAST=OFF")
  endif()
else()
  message(STATUS "attn: without CLBlast (ATTN_WITH_CLBLAST=${ATTN_WITH_CLBLAST}): "
                 "attn_forward_materialized, attn_attention_weights and attn_layer_create "
                 "will return ATTN_ERROR_UNSUPPORTED")
endif()
