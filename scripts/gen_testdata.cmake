# Synthetic test-model generator (writes testdata/mobilenet_tiny.nb, multi_input.nb, int8_matmul.nb,
# lenient_attrs.nb and lstm_rec.nb).
# Included from the top-level CMakeLists after cldiff_lib is defined.
add_executable(cldiff_gen_testdata ${CMAKE_CURRENT_LIST_DIR}/gen_testdata.c)
target_link_libraries(cldiff_gen_testdata PRIVATE cldiff_lib m)
