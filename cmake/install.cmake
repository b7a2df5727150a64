# install.cmake -- what `cmake --install` puts in place: include/attn.h and
# the headers it includes (include/attn/), the
# shared library (libattn.so -> libattn.so.MAJOR -> libattn.so.VERSION) or,
# with BUILD_SHARED_LIBS=OFF, libattn.a, a CMake package (find_package(attn)
# gives attn::attn), a pkg-config file (attn.pc), the command-line tools and
# LICENSE (share/doc/attn). Internals (host/*.h, the static attn_internal)
# are never installed.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# What a static libattn needs at the consumer's link: OpenCL (public), then
# CLBlast and cJSON as the files found here, libm and threads. The CMake
# package gets them through attn::attn's link interface (attnConfig.cmake
# finds Threads), attn.pc through Libs.private (pkg-config --static).
set(ATTN_PRIVATE_LIBRARIES)
if(ATTN_HAVE_CLBLAST)
  list(APPEND ATTN_PRIVATE_LIBRARIES ${ATTN_CLBLAST_LIBRARY})
endif()
if(ATTN_CJSON_LIBRARY)
  list(APPEND ATTN_PRIVATE_LIBRARIES ${ATTN_CJSON_LIBRARY})
else()
  list(APPEND ATTN_PRIVATE_LIBRARIES cjson) # found through cJSON's config: -lcjson
endif()
# The linker's name of the library file `path` (/x/libclblast.so: clblast).
function(attn_link_name path out)
  get_filename_component(name "${path}" NAME_WE)
  string(REGEX REPLACE "^lib" "" name "${name}")
  set(${out} "${name}" PARENT_SCOPE)
endfunction()
set(ATTN_PC_LIBS_PRIVATE)
foreach(lib ${ATTN_PRIVATE_LIBRARIES})
  if(IS_ABSOLUTE "${lib}")
    get_filename_component(dir "${lib}" DIRECTORY)
    attn_link_name("${lib}" lib)
    if(NOT dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
      string(APPEND ATTN_PC_LIBS_PRIVATE " -L${dir}")
    endif()
  endif()
  string(APPEND ATTN_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
string(APPEND ATTN_PC_LIBS_PRIVATE " -lm -pthread")
if(ATTN_LIBRARY_TYPE STREQUAL "STATIC")
  foreach(lib ${ATTN_PRIVATE_LIBRARIES})
    # a file in the linker's own folders by name (-lclblast), so that the
    # package links on another layout (/usr/lib64) too; elsewhere (a
    # CMAKE_PREFIX_PATH folder) the file found here is the best guess
    if(IS_ABSOLUTE "${lib}")
      get_filename_component(dir "${lib}" DIRECTORY)
      if(dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
        attn_link_name("${lib}" lib)
      endif()
    endif()
    target_link_libraries(attn INTERFACE "$<INSTALL_INTERFACE:$<LINK_ONLY:${lib}>>")
  endforeach()
endif()

install(TARGETS attn EXPORT attnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/attn.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/attn/core.h
              ${CMAKE_CURRENT_SOURCE_DIR}/include/attn/config.h
              ${CMAKE_CURRENT_SOURCE_DIR}/include/attn/forward.h
              ${CMAKE_CURRENT_SOURCE_DIR}/include/attn/decode.h
              ${CMAKE_CURRENT_SOURCE_DIR}/include/attn/blas.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attn)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(ATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attn)
install(EXPORT attnTargets NAMESPACE attn:: DESTINATION ${ATTN_CMAKE_DIR})
configure_package_config_file(cmake/attnConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/attnConfig.cmake INSTALL_DESTINATION ${ATTN_CMAKE_DIR})
# 0.x: a new minor version may change the API, so only the same minor matches
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/attnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attnConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/attnConfigVersion.cmake
  DESTINATION ${ATTN_CMAKE_DIR})

# attn.pc names its folders relative to itself (${pcfiledir}), so that it
# moves with the prefix. An absolute libdir puts it where nothing says
# where the prefix is: then it names the prefix `cmake --install` installs
# into, filled in at install time.
set(ATTN_ABSOLUTE_LIBDIR OFF)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ATTN_ABSOLUTE_LIBDIR ON)
endif()
if(ATTN_ABSOLUTE_LIBDIR)
  set(ATTN_PC_PREFIX "@ATTN_INSTALL_PREFIX@") # configure_file leaves it
else()
  file(RELATIVE_PATH ATTN_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
  string(REGEX REPLACE "/$" "" ATTN_PC_TO_PREFIX "${ATTN_PC_TO_PREFIX}")
  set(ATTN_PC_PREFIX "\${pcfiledir}/${ATTN_PC_TO_PREFIX}")
endif()
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(ATTN_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(ATTN_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
configure_file(cmake/attn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/attn.pc @ONLY)
if(ATTN_ABSOLUTE_LIBDIR)
  # written beside the build, then installed by file(INSTALL), which
  # honours DESTDIR and lists it in install_manifest.txt
  set(ATTN_PC_FILLED ${CMAKE_CURRENT_BINARY_DIR}/pc-installed/attn.pc)
  install(CODE "
    file(READ [[${CMAKE_CURRENT_BINARY_DIR}/attn.pc]] attn_pc)
    string(REPLACE \"@ATTN_INSTALL_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" attn_pc \"\${attn_pc}\")
    file(WRITE [[${ATTN_PC_FILLED}]] \"\${attn_pc}\")
    file(INSTALL DESTINATION [[${CMAKE_INSTALL_LIBDIR}/pkgconfig]] TYPE FILE
         FILES [[${ATTN_PC_FILLED}]])")
else()
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attn.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# The tools (when ATTN_BUILD_TOOLS made them), finding libattn beside them
# ($prefix/bin -> $prefix/lib) from any prefix.
# An absolute libdir is the library's place from any prefix.
if(ATTN_ABSOLUTE_LIBDIR)
  set(ATTN_TOOLS_RPATH "${CMAKE_INSTALL_LIBDIR}")
else()
  set(ATTN_TOOLS_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
foreach(tool attn-info attn-bench attn-tune attn-weights)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH "${ATTN_TOOLS_RPATH}")
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
