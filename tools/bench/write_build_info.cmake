# Writes longrun-bench's build facts header (build_info.h.in -> OUT): the source tree's git
# commit (`git describe --always --dirty`; "unknown" outside a git checkout or without git)
# and the build type. Run in script mode on every build of longrun-bench (provenance.cmake);
# configure_file leaves OUT untouched when nothing changed, so only a new commit, a change to
# the tree's clean/dirty state or a new build type recompiles provenance.cpp.
#   cmake -DSOURCE_DIR=... -DTEMPLATE=... -DOUT=... -DBUILD_TYPE=... -P write_build_info.cmake
set(LONGRUN_BENCH_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --abbrev=12
    WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0 AND NOT out STREQUAL "")
    set(LONGRUN_BENCH_COMMIT "${out}")
  endif()
endif()
set(LONGRUN_BENCH_BUILD_TYPE "${BUILD_TYPE}")
if(LONGRUN_BENCH_BUILD_TYPE STREQUAL "")
  set(LONGRUN_BENCH_BUILD_TYPE "none")
endif()
configure_file("${TEMPLATE}" "${OUT}" @ONLY)
