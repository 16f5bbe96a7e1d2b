# cmake --install: public headers, the static library (C++ and C API), the shared library
# (C API only; LONGRUN_SHARED), a CMake package (find_package(longrun) -> longrun::longrun,
# longrun::longrun_shared) and a pkg-config file (longrun.pc: the C API).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/longrun ${PROJECT_SOURCE_DIR}/ops/include/longrun
                  ${PROJECT_SOURCE_DIR}/models/include/longrun ${PROJECT_SOURCE_DIR}/capi/include/longrun
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(LONGRUN_INSTALL_TARGETS longrun longrun_headers longrun_backend_deps)
if(TARGET longrun_shared)
  list(APPEND LONGRUN_INSTALL_TARGETS longrun_shared)
endif()
install(TARGETS ${LONGRUN_INSTALL_TARGETS}
        EXPORT longrunTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT longrunTargets NAMESPACE longrun:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/longrun)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/longrunConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/longrunConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/longrun)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/longrunConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/longrunConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/longrunConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/FindFFTW3f.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/longrun)

# pkg-config: paths relative to the .pc file, so `cmake --install --prefix X` works for any X.
file(RELATIVE_PATH LONGRUN_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
# A static link of liblongrun.a also needs the CUDA runtime when the CUDA backend is built in
# (cuBLAS is loaded at run time, backends/cuda/cublas_library.h).
set(LONGRUN_PC_CUDA_LIBS "")
if(LONGRUN_HAVE_CUDA)
  set(LONGRUN_PC_CUDA_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -ldl")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/longrun.pc.in ${CMAKE_CURRENT_BINARY_DIR}/longrun.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/longrun.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
