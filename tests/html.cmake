# report.html in a real browser (issue 27): headless Chromium renders the report of a clean run,
# a planted kernel fault, an output drift and a run interrupted during run B; no console error,
# verdict card and tables present, header-click sorting checked, over the DevTools protocol on
# a pipe (tests/html/cdp.py). Screenshots and pages are kept as CI artifacts in
# <build>/test-artifacts/html/<case>.png and <case>.html (with chromium.log). Skipped (77) only
# without a chromium executable (Debian package chromium, scripts/setup.sh tests). About 5 s.
set(CD_HTML_PY ${CMAKE_SOURCE_DIR}/.venv/bin/python)
if(NOT EXISTS ${CD_HTML_PY})
  find_program(CD_HTML_PY_SYS python3)
  set(CD_HTML_PY ${CD_HTML_PY_SYS})
endif()
# hold_shim (tests/hardening.cmake) holds cldiff at run B's fifth tensor for the interrupt
add_test(NAME html_report
         COMMAND ${CD_HTML_PY} ${CMAKE_CURRENT_SOURCE_DIR}/html/test_html_report.py $<TARGET_FILE:cldiff>
                 ${CMAKE_SOURCE_DIR} $<TARGET_FILE:hold_shim> ${CMAKE_BINARY_DIR}/test-artifacts/html)
set_tests_properties(html_report PROPERTIES ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1" SKIP_RETURN_CODE 77
                     LABELS html TIMEOUT 180)
