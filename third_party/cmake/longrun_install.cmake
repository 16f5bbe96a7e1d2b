# cmake --install: public headers, the static library, and a CMake package
# (find_package(longrun) -> longrun::longrun).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/longrun ${PROJECT_SOURCE_DIR}/ops/include/longrun
                  ${PROJECT_SOURCE_DIR}/models/include/longrun
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS longrun longrun_headers longrun_backend_deps
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
