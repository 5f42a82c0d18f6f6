# Diagnosis tests (issue 6, docs/diagnosis.md): a generator of small models with planted
# hazards, and end-to-end checks through the cldiff executable.
add_executable(diag_gen ${CMAKE_CURRENT_SOURCE_DIR}/diag/diag_gen.c)
target_link_libraries(diag_gen PRIVATE cldiff_lib)
if(NOT DEFINED CD_E2E_PYTHON)
  set(CD_E2E_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
endif()
add_test(NAME diag_e2e COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/diag/test_diag.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(diag_e2e PROPERTIES LABELS diag TIMEOUT 600
  ENVIRONMENT "CLDIFF=$<TARGET_FILE:cldiff>;DIAG_GEN=$<TARGET_FILE:diag_gen>;CD_SOURCE_DIR=${CMAKE_SOURCE_DIR};CLDIFF_NO_PROGRESS=1;NO_COLOR=1;PYTHONDONTWRITEBYTECODE=1")
