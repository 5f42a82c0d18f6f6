# The direction of the dependencies (docs/design.md §2): scripts/deps.py checks the includes of
# src/, probes/ and report/ against the level table of docs/design.md and the calls between files
# in the library's object files (nm); what the tree still breaks is tests/deps_known.txt, and the
# test fails on any other circle or upward include and on a listed one that is gone. The
# self-test plants a call circle (two compiled files), an include circle and an upward include.
find_program(CD_DEPS_PYTHON python3)
find_program(CD_DEPS_NM nm)
if(CD_DEPS_PYTHON AND CD_DEPS_NM)
  add_test(NAME deps_graph
           COMMAND ${CD_DEPS_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/deps.py ${CMAKE_SOURCE_DIR}
                   --build ${CMAKE_BINARY_DIR} --nm ${CD_DEPS_NM}
                   --known ${CMAKE_CURRENT_SOURCE_DIR}/deps_known.txt)
  add_test(NAME deps_graph_selftest COMMAND ${CD_DEPS_PYTHON} ${CMAKE_SOURCE_DIR}/scripts/deps.py --self-test)
  set_tests_properties(deps_graph deps_graph_selftest PROPERTIES LABELS deps TIMEOUT 120
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
else()
  message(STATUS "python3 or nm not found: the deps_graph tests (circles, upward includes) are not registered")
endif()
