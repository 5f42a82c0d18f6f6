# MNN (docs/mnn.md): the .mnn reader through `cldiff inspect` and `cldiff run --backends cpu`
# on testdata/mnn/ (outputs against onnxruntime), and bad files (exit 3 with the offset).
add_test(NAME mnn_reader
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_reader.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(mnn_reader PROPERTIES LABELS "mnn" TIMEOUT 300)
