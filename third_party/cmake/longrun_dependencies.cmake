# Finds the system dependencies (Debian packages; nothing vendored):
#   FFTW3 single precision (libfftw3-dev), oneTBB (libtbb-dev), nlohmann-json
#   (nlohmann-json3-dev), doctest (doctest-dev, tests only), CUDA toolkit (optional).
find_package(Threads REQUIRED)
find_package(FFTW3f REQUIRED)               # third_party/cmake/FindFFTW3f.cmake
find_package(TBB REQUIRED COMPONENTS tbb)
find_package(nlohmann_json 3.10 REQUIRED)
if(LONGRUN_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()

# CUDA: enabled when nvcc exists (LONGRUN_CUDA=AUTO) or forced.
set(LONGRUN_HAVE_CUDA OFF)
if(NOT LONGRUN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc AND NOT DEFINED ENV{CUDACXX})
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (sm_90) SASS plus compute_90 PTX so newer GPUs JIT it.
      set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
    endif()
    enable_language(CUDA)
    # The kernels include the C++20 runtime headers. CMake 3.25 knows no C++20 flag for nvcc
    # (and, with none, asks for CUDA20 anyway because CXX_STANDARD is 20): name it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(LONGRUN_HAVE_CUDA ON)
  elseif(LONGRUN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LONGRUN_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "longrun: CUDA backend ${LONGRUN_HAVE_CUDA}")
