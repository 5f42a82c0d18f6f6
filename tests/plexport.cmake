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

# The export decoded without Paddle-Lite (tests/plexport/decode_check.py: its own protobuf and
# params reader): runs everywhere, on the test-data models and every shared model present.
find_program(CD_PLX_PYTHON python3)
if(CD_PLX_PYTHON)
  get_filename_component(CD_PLX_SHARED ${CMAKE_SOURCE_DIR}/../shared/models ABSOLUTE)
  file(GLOB CD_PLX_MODELS ${CMAKE_SOURCE_DIR}/testdata/*.nb ${CD_PLX_SHARED}/*.nb)
  add_test(NAME pl_export_decode
           COMMAND ${CD_PLX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/plexport/decode_check.py $<TARGET_FILE:cldiff>
                   ${CMAKE_CURRENT_BINARY_DIR}/pl_export_decode ${CD_PLX_MODELS})
  set_tests_properties(pl_export_decode PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS paddle-lite)
endif()

# Declared shapes of the export (tests/plexport/shapes_check.py, docs/paddle-lite-findings.md):
# activations with inferred shapes, not the .nb's stale per-name ones that made Opt drop a layout
# op (ppocr_v4_mobile_cls fc) and fold a reshape into a negative-dim parameter (ppocr_v2.0_cls);
# with the paddlelite wheel also checks Opt's OpenCL models. Skips without the shared models.
if(CD_PLX_PYTHON)
  add_test(NAME pl_export_shapes
           COMMAND ${CD_PLX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/plexport/shapes_check.py $<TARGET_FILE:cldiff>
                   ${CMAKE_SOURCE_DIR} ${CD_PLX_SHARED} ${CMAKE_CURRENT_BINARY_DIR}/pl_export_shapes)
  set_tests_properties(pl_export_shapes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS paddle-lite)
endif()
