# Engine-owned test registrations.
#
# Python oracle tests: every tests/oracle/test_<family>.py compares op_runner against
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

# The same oracle cases with the CPU backend's recycled output buffers poisoned (0xff bytes)
# for ops that declare CD_OPF_WRITES_ALL: an element such a kernel leaves unwritten fails.
foreach(name test_nn test_basic test_more)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/oracle/${name}.py)
    add_test(NAME oracle_${name}_poisoned COMMAND ${CD_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/${name}.py
             WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    set_tests_properties(oracle_${name}_poisoned PROPERTIES
      ENVIRONMENT "CD_OP_RUNNER=$<TARGET_FILE:op_runner>;PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/oracle;CLDIFF_POISON_OUTPUTS=1"
      LABELS oracle TIMEOUT 600)
  endif()
endforeach()
