# The OpenCL backend's build-time part: the emulation library of Intel
# GPU-only builtins (emu/*.cl) compiled to SPIR-V by clang-22's own SPIR-V
# backend and embedded into libzetile; and the OpenCL C unit-test kernels of
# each emulated builtin (emu/tests/*.cl), compiled beside the tests.
# Included from the top-level CMakeLists.txt after the libzetile targets.
find_program(ZT_OPENCL_CLANG NAMES clang-22 clang
  HINTS ${LLVM_ROOT}/bin DOC "clang with the SPIR-V target (OpenCL emulation library)")
set(ZT_OCL_DIR ${CMAKE_SOURCE_DIR}/runtime/opencl)
set(ZT_OCL_GEN ${CMAKE_BINARY_DIR}/generated)
set(ZT_OCL_CLFLAGS --target=spirv64 -cl-std=CL3.0 -O2 -c)
file(GLOB ZT_OCL_EMU_SRC CONFIGURE_DEPENDS ${ZT_OCL_DIR}/emu/*.cl)
if(ZT_OPENCL_CLANG)
  add_custom_command(
    OUTPUT ${ZT_OCL_GEN}/zt_opencl_emu.spv
    COMMAND ${ZT_OPENCL_CLANG} ${ZT_OCL_CLFLAGS} ${ZT_OCL_DIR}/emu/zt_emu.cl
      -o ${ZT_OCL_GEN}/zt_opencl_emu.spv
    DEPENDS ${ZT_OCL_EMU_SRC}
    COMMENT "OpenCL emulation library -> SPIR-V" VERBATIM)
  set(ZT_OCL_EMU_SPV ${ZT_OCL_GEN}/zt_opencl_emu.spv)
else()
  message(WARNING "clang-22 not found: the OpenCL backend runs no kernel that needs "
                  "emulated Intel GPU builtins")
  set(ZT_OCL_EMU_SPV "")
endif()
add_custom_command(
  OUTPUT ${ZT_OCL_GEN}/zt_opencl_emu_spv.c
  COMMAND ${CMAKE_COMMAND} -DIN=${ZT_OCL_EMU_SPV} -DOUT=${ZT_OCL_GEN}/zt_opencl_emu_spv.c
    -DNAME=zt_cl_emu_spv -P ${CMAKE_SOURCE_DIR}/cmake/embed_file.cmake
  DEPENDS ${ZT_OCL_EMU_SPV} ${CMAKE_SOURCE_DIR}/cmake/embed_file.cmake
  COMMENT "Embedding the OpenCL emulation library" VERBATIM)
foreach(t zetile_shared zetile_static)
  target_sources(${t} PRIVATE ${ZT_OCL_GEN}/zt_opencl_emu_spv.c)
endforeach()

# Unit-test kernels: tests/c/test_opencl_emu.c loads them from
# ${CMAKE_BINARY_DIR}/opencl_tests/<name>.spv.
if(ZT_OPENCL_CLANG AND ZT_BUILD_TESTS)
  file(GLOB ZT_OCL_TEST_CL CONFIGURE_DEPENDS ${ZT_OCL_DIR}/emu/tests/*.cl)
  file(GLOB ZT_OCL_TEST_H CONFIGURE_DEPENDS ${ZT_OCL_DIR}/emu/tests/*.h)
  set(outs "")
  foreach(src ${ZT_OCL_TEST_CL})
    get_filename_component(n ${src} NAME_WE)
    set(o ${CMAKE_BINARY_DIR}/opencl_tests/${n}.spv)
    add_custom_command(OUTPUT ${o}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/opencl_tests
      COMMAND ${ZT_OPENCL_CLANG} ${ZT_OCL_CLFLAGS} ${src} -o ${o}
      DEPENDS ${src} ${ZT_OCL_TEST_H} COMMENT "OpenCL test kernel ${n}" VERBATIM)
    list(APPEND outs ${o})
  endforeach()
  add_custom_target(zt_opencl_test_kernels ALL DEPENDS ${outs})
endif()
