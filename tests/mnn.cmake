# MNN (docs/mnn.md): the .mnn reader through `cldiff inspect` and `cldiff run --backends cpu`
# on testdata/mnn/ (outputs against onnxruntime), and bad files (exit 3 with the offset).
add_test(NAME mnn_reader
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_reader.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(mnn_reader PROPERTIES LABELS "mnn" TIMEOUT 300)

# The engines mnn-cpu and mnn-opencl on testdata/mnn/ (PoCL here): verdicts, options, the refused
# CPU fallback (exit 4), a contained crash (exit 5). Skips (77) without an MNN SDK in .mnn/.
add_test(NAME mnn_engines
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_engines.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(mnn_engines PROPERTIES LABELS "mnn;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77 COST 40)

# MNN models with ops cldiff does not map (Shape, SliceTf, computed reshapes, Select, int8 ops) on
# mnn-cpu,mnn-opencl: planned from MNN's shapes, compared only and named; IDST-quantized weights
# decoded and checked; cldiff's CPU refuses such a model (exit 8). Skips (77) without an MNN SDK.
add_test(NAME mnn_unmapped
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_unmapped.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(mnn_unmapped PROPERTIES LABELS "mnn;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77 COST 20)

# Planted faults in MNN's own OpenCL kernels at run time (scripts/mnn/mnn_planted.py: the fault
# injector layer edits the program source MNN hands to clCreateProgramWithSource): every applied
# plant named as a KERNEL FAULT at its layer, an OpenCL program that does not build contained.
add_test(NAME mnn_planted
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_SOURCE_DIR}/scripts/mnn/mnn_planted.py
                 --cldiff $<TARGET_FILE:cldiff> --faultinj $<TARGET_FILE:faultinj> --skip-without-sdk
                 --out ${CMAKE_BINARY_DIR}/mnn-planted)
set_tests_properties(mnn_planted PROPERTIES LABELS "mnn;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77 COST 60
                     ENVIRONMENT "CLDIFF_NO_PROGRESS=1;NO_COLOR=1")

# The repro pack of a .mnn run: the faulty layer cut out by MNN itself (layer.mnn), its command
# reproducing a planted fault on MNN's engines and passing without it.
add_test(NAME mnn_repro
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_repro.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR} $<TARGET_FILE:faultinj>)
set_tests_properties(mnn_repro PROPERTIES LABELS "mnn;e2e" TIMEOUT 600 SKIP_RETURN_CODE 77)

# The engine mnn-arm (MNN's ARM kernels, an aarch64 SDK under qemu-aarch64 -cpu max) on
# testdata/mnn/: mnn-arm,mnn-opencl and cpu,mnn-arm PASS, precision=low recorded and judged as
# fp16 arithmetic (MNN's ARMv8.2 backend), errors exit 4 / a crash under qemu exit 5. Skips (77)
# without the aarch64 SDK (CLDIFF_BUILD_MNN_ARM=1 scripts/setup_mnn.sh builds it). 50 s with cold runner and
# PoCL caches, 17 s warm.
add_test(NAME mnn_arm
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_arm.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR})
set_tests_properties(mnn_arm PROPERTIES LABELS "mnn;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77)

# The two MNN 3.6.1 bugs of docs/mnn-findings.md: the OpenCL buffer ArgMax repro (argmax.mnn: KERNEL
# FAULT at arg_max_0, only the first H*W/4 indices written; image mode, the 7x7 control and the
# kernel with the report's fix PASS) and the x86 int8 max pooling replayed on MNN's stored bytes
# (right on MNN's ARM kernels under qemu). About 2 s. Skips (77) without an MNN SDK.
add_test(NAME mnn_findings
         COMMAND ${CMAKE_SOURCE_DIR}/.venv/bin/python ${CMAKE_CURRENT_SOURCE_DIR}/mnn/test_mnn_findings.py
                 $<TARGET_FILE:cldiff> ${CMAKE_SOURCE_DIR} $<TARGET_FILE:faultinj>)
set_tests_properties(mnn_findings PROPERTIES LABELS "mnn;e2e" TIMEOUT 600 SKIP_RETURN_CODE 77)
