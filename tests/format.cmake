# The tree follows .clang-format (issue 21 point 5): every C source and header under src/,
# probes/, report/ and tests/ (but not generated fuzz corpora) formats to itself. A change that
# does not fails here with the file and the first differing lines; `scripts/format.sh` fixes it.
find_program(CD_CLANG_FORMAT NAMES clang-format clang-format-14 clang-format-15)
if(CD_CLANG_FORMAT)
  add_test(NAME format_check
           COMMAND ${CMAKE_SOURCE_DIR}/scripts/format.sh --check --clang-format ${CD_CLANG_FORMAT})
  # TIMEOUT is a hang guard: ~17 s of CPU, but one short clang-format process per file, so on a
  # loaded 2-core machine (load average 12) it took 161 s of wall time and timed out at 120
  set_tests_properties(format_check PROPERTIES LABELS docs TIMEOUT 600)
else()
  message(STATUS "clang-format not found: format_check is not registered (apt-get install clang-format)")
endif()
