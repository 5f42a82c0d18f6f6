# Hardening tests (issue 5; docs/hardening.md). All bounded; together with tests/fuzz.cmake
# they take about 4 minutes of a 2-core machine, beside the other tests.
set(CD_HARD_PY ${CMAKE_SOURCE_DIR}/.venv/bin/python)
set(CD_HARD_DIR ${CMAKE_CURRENT_SOURCE_DIR}/hardening)
set(CD_HARD_ENV "CD_SHARED_MODELS=${CMAKE_SOURCE_DIR}/../shared/models")

# SIGINT/SIGTERM mid-run: exit 130, no op after the signal, dump marked incomplete, no
# temporaries, OpenCL child gone. The moment is an event, not a delay: the preloaded
# hold_shim (test-only) holds cldiff at a named dataset of a run until the signal has been
# handled, so the result does not depend on the machine's load.
add_library(hold_shim SHARED ${CD_HARD_DIR}/hold_shim.c)
target_include_directories(hold_shim PRIVATE ${HDF5_INCLUDE_DIRS})
target_link_libraries(hold_shim PRIVATE ${CMAKE_DL_LIBS})
# preloaded ahead of everything: no sanitizer runtime of its own (the ASan build's cldiff
# brings one; the test sets verify_asan_link_order=0)
target_compile_options(hold_shim PRIVATE -fno-sanitize=all)
target_link_options(hold_shim PRIVATE -fno-sanitize=all)
set_target_properties(hold_shim PROPERTIES C_VISIBILITY_PRESET default)
add_test(NAME hardening_interrupt
         COMMAND ${CD_HARD_PY} ${CD_HARD_DIR}/test_interrupt.py $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR}
                 $<TARGET_FILE:hold_shim>)
# Same command twice: bit-identical datasets, equal attributes apart from timings.
add_test(NAME hardening_determinism
         COMMAND ${CD_HARD_PY} ${CD_HARD_DIR}/test_determinism.py $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
# Full disk (tiny tmpfs), read-only --out, uncreatable --out: exit 6, nothing marked complete.
add_test(NAME hardening_disk
         COMMAND bash ${CD_HARD_DIR}/test_disk.sh $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
# aarch64 cross build + qemu-user runs of the unit tests and the shared models' CPU runs,
# compared with the x86-64 dumps of the same commands.
add_test(NAME hardening_aarch64
         COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/cross-aarch64.sh --ci --build ${CMAKE_BINARY_DIR}/aarch64
                 --host-cldiff $<TARGET_FILE:cldiff>)
set_tests_properties(hardening_interrupt hardening_determinism hardening_disk hardening_aarch64 PROPERTIES
                     ENVIRONMENT "${CD_HARD_ENV}" LABELS hardening SKIP_RETURN_CODE 77)
set_tests_properties(hardening_interrupt PROPERTIES TIMEOUT 300)
set_tests_properties(hardening_determinism PROPERTIES TIMEOUT 180)
set_tests_properties(hardening_disk PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE)
# not RUN_SERIAL: its binfmt handler and folders are its own; qemu runs beside other tests
# TIMEOUT is a hang guard (its steps have their own): beside the sanitizer builds that
# scripts/test.sh runs at the same time, on a loaded 2-core machine, 600 s was once too short
set_tests_properties(hardening_aarch64 PROPERTIES TIMEOUT 1500)
