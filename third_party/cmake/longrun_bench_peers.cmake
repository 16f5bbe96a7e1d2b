# Optional peers for longrun-bench: libraries its numbers are compared with. Benchmark only:
# they are linked into longrun-bench alone, never into the library.
#   LONGRUN_BENCH_PEERS=AUTO  use those found (default)
#                       ON    require all of them
#                       OFF   none (built-in peers memcpy, std::sort, dense attention remain)
# Peers (Debian packages): OpenBLAS cblas_sgemm (libopenblas-dev), oneDNN dnnl_sgemm
# (libdnnl-dev; its OpenMP runtime needs OpenMP to set the thread count), FFTW REDFT10/01
# with threads (libfftw3-dev: fftw3f + fftw3f_threads). tools/dev/deps.sh --bench-peers
# installs them.
#
# Defines the INTERFACE target longrun_bench_peers (libraries + LONGRUN_BENCH_HAVE_* = 0/1)
# and LONGRUN_BENCH_PEERS_FOUND (a list of the peers compiled in).
set(LONGRUN_BENCH_PEERS "AUTO" CACHE STRING "longrun-bench peer libraries: AUTO, ON or OFF")
set_property(CACHE LONGRUN_BENCH_PEERS PROPERTY STRINGS AUTO ON OFF)

add_library(longrun_bench_peers INTERFACE)
set(LONGRUN_BENCH_PEERS_FOUND "")
set(_lr_missing "")

if(NOT LONGRUN_BENCH_PEERS STREQUAL "OFF")
  find_package(PkgConfig QUIET)

  # OpenBLAS: its own cblas.h (with openblas_set_num_threads), not the netlib one.
  if(PkgConfig_FOUND)
    pkg_check_modules(PC_OPENBLAS QUIET openblas)
  endif()
  find_path(LONGRUN_OPENBLAS_INCLUDE_DIR cblas.h HINTS ${PC_OPENBLAS_INCLUDE_DIRS}
            PATH_SUFFIXES openblas openblas-pthread NO_DEFAULT_PATH)
  if(NOT LONGRUN_OPENBLAS_INCLUDE_DIR)
    find_path(LONGRUN_OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread)
  endif()
  find_library(LONGRUN_OPENBLAS_LIBRARY NAMES openblas HINTS ${PC_OPENBLAS_LIBRARY_DIRS})
  if(LONGRUN_OPENBLAS_INCLUDE_DIR AND LONGRUN_OPENBLAS_LIBRARY
     AND EXISTS "${LONGRUN_OPENBLAS_INCLUDE_DIR}/openblas_config.h")
    target_include_directories(longrun_bench_peers SYSTEM INTERFACE ${LONGRUN_OPENBLAS_INCLUDE_DIR})
    target_link_libraries(longrun_bench_peers INTERFACE ${LONGRUN_OPENBLAS_LIBRARY})
    target_compile_definitions(longrun_bench_peers INTERFACE LONGRUN_BENCH_HAVE_OPENBLAS=1)
    list(APPEND LONGRUN_BENCH_PEERS_FOUND openblas)
  else()
    list(APPEND _lr_missing "OpenBLAS (libopenblas-dev)")
  endif()

  # oneDNN: dnnl_sgemm; Debian's build threads with OpenMP, so OpenMP must be there too.
  find_path(LONGRUN_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.h)
  find_library(LONGRUN_ONEDNN_LIBRARY NAMES dnnl)
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(LONGRUN_ONEDNN_INCLUDE_DIR AND LONGRUN_ONEDNN_LIBRARY AND OpenMP_CXX_FOUND)
    target_include_directories(longrun_bench_peers SYSTEM INTERFACE ${LONGRUN_ONEDNN_INCLUDE_DIR})
    target_link_libraries(longrun_bench_peers INTERFACE ${LONGRUN_ONEDNN_LIBRARY} OpenMP::OpenMP_CXX)
    target_compile_definitions(longrun_bench_peers INTERFACE LONGRUN_BENCH_HAVE_ONEDNN=1)
    list(APPEND LONGRUN_BENCH_PEERS_FOUND onednn)
  else()
    list(APPEND _lr_missing "oneDNN (libdnnl-dev) with OpenMP")
  endif()

  # FFTW's threaded planner, next to the fftw3f the library already uses.
  find_library(LONGRUN_FFTW3F_THREADS_LIBRARY NAMES fftw3f_threads HINTS ${PC_FFTW3F_LIBRARY_DIRS})
  if(TARGET FFTW3::fftw3f AND LONGRUN_FFTW3F_THREADS_LIBRARY)
    target_link_libraries(longrun_bench_peers INTERFACE ${LONGRUN_FFTW3F_THREADS_LIBRARY} FFTW3::fftw3f
                          Threads::Threads)
    target_compile_definitions(longrun_bench_peers INTERFACE LONGRUN_BENCH_HAVE_FFTW=1)
    list(APPEND LONGRUN_BENCH_PEERS_FOUND fftw)
  else()
    list(APPEND _lr_missing "FFTW threads (libfftw3-dev)")
  endif()

  if(LONGRUN_BENCH_PEERS STREQUAL "ON" AND _lr_missing)
    message(FATAL_ERROR "LONGRUN_BENCH_PEERS=ON but not found: ${_lr_missing} "
                        "(tools/dev/deps.sh --bench-peers installs them)")
  endif()
  mark_as_advanced(LONGRUN_OPENBLAS_INCLUDE_DIR LONGRUN_OPENBLAS_LIBRARY LONGRUN_ONEDNN_INCLUDE_DIR
                   LONGRUN_ONEDNN_LIBRARY LONGRUN_FFTW3F_THREADS_LIBRARY)
endif()
message(STATUS "longrun-bench peers (LONGRUN_BENCH_PEERS=${LONGRUN_BENCH_PEERS}): "
               "${LONGRUN_BENCH_PEERS_FOUND}")
unset(_lr_missing)
