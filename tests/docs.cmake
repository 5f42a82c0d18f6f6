# Self-contained docs: every document the code, the tests and the pages cite exists in docs/,
# with the section (§N.M) and the rule it cites (tests/docs/check_doc_refs.py); the self-test
# plants broken citations in a temporary tree and checks the checker finds exactly those.
find_program(CD_DOCS_PYTHON python3)
if(CD_DOCS_PYTHON)
  add_test(NAME docs_refs
           COMMAND ${CD_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_doc_refs.py ${CMAKE_SOURCE_DIR})
  add_test(NAME docs_refs_selftest
           COMMAND ${CD_DOCS_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_doc_refs.py --self-test)
  set_tests_properties(docs_refs docs_refs_selftest PROPERTIES LABELS docs TIMEOUT 60
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
else()
  message(STATUS "python3 not found: the docs_refs tests (cited documents exist) are not registered")
endif()
