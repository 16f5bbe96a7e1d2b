# longrun-bench's build facts (provenance.h): a target that rewrites build_info.h before every
# build of longrun-bench when the commit or build type changed (write_build_info.cmake), and
# the include path that finds it. Included by tools/CMakeLists.txt after add_executable.
set(LONGRUN_BENCH_BUILD_INFO_DIR "${CMAKE_CURRENT_BINARY_DIR}/longrun_bench_generated")
add_custom_target(longrun_bench_build_info
  COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
    -DTEMPLATE=${CMAKE_CURRENT_LIST_DIR}/build_info.h.in -DOUT=${LONGRUN_BENCH_BUILD_INFO_DIR}/build_info.h
    -DBUILD_TYPE=$<CONFIG> -P ${CMAKE_CURRENT_LIST_DIR}/write_build_info.cmake
  BYPRODUCTS "${LONGRUN_BENCH_BUILD_INFO_DIR}/build_info.h"
  COMMENT "longrun-bench build info (git commit, build type)" VERBATIM)
add_dependencies(longrun-bench longrun_bench_build_info)
target_include_directories(longrun-bench PRIVATE "${LONGRUN_BENCH_BUILD_INFO_DIR}")
