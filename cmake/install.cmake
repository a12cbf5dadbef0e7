# Install rules, two layouts:
# - a wheel (scikit-build-core sets SKBUILD): the extension, libzetile,
#   libzetile_compiler, the compile worker and the tile dialect go into the
#   package folder `zetile/` (the extension's and the worker's RPATH is
#   $ORIGIN; libzetile dlopens the compiler and starts the worker from its
#   own folder), with the package's Python files from python-bindings/zetile.
#   An editable install (SKBUILD_STATE "editable", pyproject.toml) installs
#   the binaries only: scikit-build-core serves the Python files from
#   python-bindings/ itself, and a copy here would shadow them. With
#   ZT_EDITABLE_FROM_BUILD (scripts/setup.sh) it installs nothing: the
#   binaries are the ones the build/ tree copies into python-bindings/zetile.
# - a C install (`cmake --install build --prefix P`): P/lib/libzetile.so
#   (+ .a), P/lib/libzetile_compiler.so, P/include/zetile/*.h,
#   P/share/zetile/tile.irdl.mlir, an exported package
#   (P/lib/cmake/zetile: find_package(zetile) -> zetile::zetile,
#   zetile::compiler) and P/lib/pkgconfig/zetile.pc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# libzetile_compiler links Debian's libMLIR/libLLVM from LLVM_ROOT/lib, which
# is not on the dynamic linker's default path: keep it in the installed RUNPATH.
if(TARGET zetile_compiler)
  set_target_properties(zetile_compiler PROPERTIES INSTALL_RPATH "${LLVM_ROOT}/lib")
endif()

if(SKBUILD)
  set(ZT_PY_DEST zetile)
  option(ZT_EDITABLE_FROM_BUILD "Editable install using the build/ tree's binaries" OFF)
  # The one target such an install builds (pyproject.toml, build.targets).
  add_custom_target(zt_editable_nothing)
  if(ZT_EDITABLE_FROM_BUILD)
    return()
  endif()
  if(NOT SKBUILD_STATE STREQUAL "editable")
    install(DIRECTORY ${CMAKE_SOURCE_DIR}/python-bindings/zetile/ DESTINATION ${ZT_PY_DEST}
      COMPONENT python FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
    # The templates (zetile.ops finds them inside the package when installed;
    # an editable install finds them beside python-bindings/).
    install(DIRECTORY ${CMAKE_SOURCE_DIR}/stdlib-kernels/ DESTINATION ${ZT_PY_DEST}/stdlib-kernels
      COMPONENT python PATTERN "__pycache__" EXCLUDE)
    # torch's autoload hook (the "torch.backends" entry point in pyproject.toml):
    # a top-level module, so `import torch` does not import the zetile package.
    install(FILES ${CMAKE_SOURCE_DIR}/python-bindings/_zetile_torch_hook.py DESTINATION .
      COMPONENT python)
  endif()
  install(TARGETS zetile_shared LIBRARY DESTINATION ${ZT_PY_DEST} COMPONENT python)
  # The compile worker (ZETILE_COMPILE_TIMEOUT, jit/compile_budget.c), found
  # beside libzetile.
  install(TARGETS zetile-compile-worker RUNTIME DESTINATION ${ZT_PY_DEST} COMPONENT python)
  if(TARGET _zetile)
    install(TARGETS _zetile LIBRARY DESTINATION ${ZT_PY_DEST} COMPONENT python)
  endif()
  if(TARGET zetile_compiler)
    install(TARGETS zetile_compiler LIBRARY DESTINATION ${ZT_PY_DEST} COMPONENT python)
    install(FILES ${CMAKE_SOURCE_DIR}/dialect/tile.irdl.mlir DESTINATION ${ZT_PY_DEST}
      COMPONENT python)
  endif()
  return()
endif()

set(ZT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/zetile)
# The shared and static libraries share OUTPUT_NAME zetile; the installed
# targets are zetile::zetile (shared) and zetile::zetile_static.
set_target_properties(zetile_shared PROPERTIES EXPORT_NAME zetile)
set_target_properties(zetile_static PROPERTIES EXPORT_NAME zetile_static)
# Consumers see only the public headers; the build tree's include dirs stay private.
set_property(TARGET zetile_shared zetile_static PROPERTY INTERFACE_INCLUDE_DIRECTORIES
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# The build tree's link interface names pkg-config's imported targets, which
# an installed package cannot: inside the build they stay as they are, and an
# installed consumer gets plain library names (the static library needs
# libffi and libxxhash; the shared one carries its own dependencies).
foreach(lk shared static)
  get_target_property(ZT_OLD_LINK zetile_${lk} INTERFACE_LINK_LIBRARIES)
  set(ZT_NEW_LINK "")
  foreach(item ${ZT_OLD_LINK})
    list(APPEND ZT_NEW_LINK "$<BUILD_INTERFACE:${item}>")
  endforeach()
  if(lk STREQUAL "static")
    foreach(item ffi xxhash ${CMAKE_DL_LIBS} pthread m)
      list(APPEND ZT_NEW_LINK "$<INSTALL_INTERFACE:${item}>")
    endforeach()
  endif()
  set_property(TARGET zetile_${lk} PROPERTY INTERFACE_LINK_LIBRARIES "${ZT_NEW_LINK}")
endforeach()
install(TARGETS zetile_shared zetile_static EXPORT zetileTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The compile worker goes beside libzetile, where libzetile looks for it
# (jit/compile_budget.c); its RPATH $ORIGIN finds libzetile there. Not
# exported: libzetile starts it, C programs do not.
install(TARGETS zetile-compile-worker RUNTIME DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET zetile_compiler)
  # A module libzetile loads on a cache miss, from its own folder; exported as
  # zetile::compiler so C programs can depend on its presence.
  set_target_properties(zetile_compiler PROPERTIES EXPORT_NAME compiler)
  install(TARGETS zetile_compiler EXPORT zetileTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${CMAKE_SOURCE_DIR}/dialect/tile.irdl.mlir
    DESTINATION ${CMAKE_INSTALL_DATADIR}/zetile)
  # The templates' exported specializations (include/zetile/ops.h).
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/stdlib-kernels/prebuilt/
    DESTINATION ${CMAKE_INSTALL_DATADIR}/zetile/prebuilt)
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/zetile DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(EXPORT zetileTargets NAMESPACE zetile:: DESTINATION ${ZT_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/zetileConfig.cmake.in
  ${CMAKE_BINARY_DIR}/zetileConfig.cmake INSTALL_DESTINATION ${ZT_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/zetileConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/zetileConfig.cmake ${CMAKE_BINARY_DIR}/zetileConfigVersion.cmake
  DESTINATION ${ZT_CMAKE_DIR})
# zetile.pc finds its prefix from its own folder (relocatable installs).
file(RELATIVE_PATH ZT_PC_PREFIX_REL "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${CMAKE_SOURCE_DIR}/cmake/zetile.pc.in ${CMAKE_BINARY_DIR}/zetile.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/zetile.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
