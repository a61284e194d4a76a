# zstd as the target alloclab_zstd: through pkg-config where there is one, else the header and
# library where CMake looks (CMAKE_PREFIX_PATH first), since a bare build machine may have zstd
# but no pkg-config.
add_library(alloclab_zstd INTERFACE)
if(PkgConfig_FOUND)
  pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
endif()
if(TARGET PkgConfig::ZSTD)
  target_link_libraries(alloclab_zstd INTERFACE PkgConfig::ZSTD)
else()
  find_path(ALLOCLAB_ZSTD_INCLUDE_DIR zstd.h)
  find_library(ALLOCLAB_ZSTD_LIBRARY zstd)
  if(NOT ALLOCLAB_ZSTD_INCLUDE_DIR OR NOT ALLOCLAB_ZSTD_LIBRARY)
    message(FATAL_ERROR "zstd not found: neither pkg-config libzstd nor zstd.h and libzstd "
                        "(Debian: libzstd-dev)")
  endif()
  message(STATUS "alloclab: zstd at ${ALLOCLAB_ZSTD_LIBRARY} (no pkg-config libzstd)")
  target_include_directories(alloclab_zstd SYSTEM INTERFACE ${ALLOCLAB_ZSTD_INCLUDE_DIR})
  target_link_libraries(alloclab_zstd INTERFACE ${ALLOCLAB_ZSTD_LIBRARY} Threads::Threads)
endif()
