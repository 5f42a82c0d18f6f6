# Op-coverage additions end to end (docs/op-coverage.md): more_gen writes one .nb model holding
# every added op type with the .nb writer; test_more_e2e.py reads it back (inspect) and diffs
# it CPU vs OpenCL in fp32 and fp16 through the cldiff executable.
add_executable(more_gen ${CMAKE_CURRENT_SOURCE_DIR}/more/more_gen.c)
target_link_libraries(more_gen PRIVATE cldiff_lib m)
if(NOT DEFINED CD_E2E_PYTHON)
  set(CD_E2E_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
endif()
add_test(NAME more_ops_e2e COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/more/test_more_e2e.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(more_ops_e2e PROPERTIES LABELS e2e TIMEOUT 600
  ENVIRONMENT "CLDIFF=$<TARGET_FILE:cldiff>;MORE_GEN=$<TARGET_FILE:more_gen>;CLDIFF_NO_PROGRESS=1;NO_COLOR=1;PYTHONDONTWRITEBYTECODE=1")
