# Fault-injection shim (tests/clshim/clshim.c): a shared library loaded with --cl-lib that
# forwards to the real ICD loader and fails as told by CLSHIM_* environment variables, and
# the end-to-end fault tests that use it (tests/e2e/test_faults.sh).
add_library(clshim SHARED ${CMAKE_CURRENT_SOURCE_DIR}/clshim/clshim.c)
target_include_directories(clshim PRIVATE ${OPENCL_INCLUDE_DIR})
target_link_libraries(clshim PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
# no "lib" prefix games: tests pass the exact file
set_target_properties(clshim PROPERTIES C_VISIBILITY_PRESET default)

add_test(NAME e2e_faults
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_faults.sh
          $<TARGET_FILE:clshim> ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
set_tests_properties(e2e_faults PROPERTIES TIMEOUT 900)

