# Engine-owned test registrations.
#
# 1. The op registry (src/engine/ops_registry.c) refers to the op family tables through WEAK
#    references so the library links while a family is still missing. A weak reference does
#    not make the linker pull an object out of a static archive, so each table (and the
#    OpenCL backend entry point, weakly referenced by op_runner) that some source defines is
#    forced in with -u. A -u for a symbol nobody defines would be a hard link error, hence
#    the configure-time scan (the source globs are CONFIGURE_DEPENDS, so a new file re-runs
#    it). The cldiff executable needs the same lines when tests are off (see engine report).
file(GLOB_RECURSE CD_ALL_C CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.c)
set(CD_FORCE_SYMBOLS)
foreach(sym cd_ops_nn cd_ops_basic cd_ops_shape cd_ops_detect cd_ops_rnn cd_opencl_backend_open)
  foreach(f ${CD_ALL_C})
    file(STRINGS ${f} hits REGEX "^(const cd_op_table|cd_status)[ \t]+${sym}[ \t]*[=(]")
    if(hits)
      list(APPEND CD_FORCE_SYMBOLS "LINKER:-u,${sym}")
      break()
    endif()
  endforeach()
endforeach()
if(CD_FORCE_SYMBOLS)
  target_link_options(cldiff_lib INTERFACE ${CD_FORCE_SYMBOLS})
endif()

# 2. Python oracle tests: every tests/oracle/test_<family>.py compares op_runner against
#    onnxruntime/numpy; it exits 1 on any mismatch.
set(CD_ORACLE_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
file(GLOB ORACLE_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/oracle/test_*.py)
foreach(py ${ORACLE_TESTS})
  get_filename_component(name ${py} NAME_WE)
  add_test(NAME oracle_${name} COMMAND ${CD_ORACLE_PYTHON} ${py}
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(oracle_${name} PROPERTIES
    ENVIRONMENT "CD_OP_RUNNER=$<TARGET_FILE:op_runner>;PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/oracle"
    LABELS oracle TIMEOUT 600)
endforeach()
