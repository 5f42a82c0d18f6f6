# cldiff export round trip through the real Paddle-Lite (the PyPI wheel): export -> Opt for x86
# -> Paddle-Lite runs it -> outputs match cldiff's CPU run. Skips (exit 77, reason printed) when
# no Python with paddlelite, numpy<2 and h5py exists (.venv-pl-ocl, .venv-pl or CLDIFF_PL_PYTHON).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME pl_export_roundtrip
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/plexport/roundtrip.py $<TARGET_FILE:cldiff>
                   ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/../shared/models ${CMAKE_CURRENT_BINARY_DIR}/pl_export_roundtrip)
  set_tests_properties(pl_export_roundtrip PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS paddle-lite)
endif()
