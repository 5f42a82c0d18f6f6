# End-to-end tests (tests/e2e/test_*.py): each drives the cldiff executable through
# subprocess and checks exit codes, reports and dumps (h5py, json, xml.etree, check_dump.py).
# Exit 77 means a prerequisite (the shared model folder) is absent: reported as skipped.
set(CD_E2E_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
if(NOT EXISTS ${CD_E2E_PYTHON})
  find_program(CD_E2E_PYTHON_SYS python3)
  set(CD_E2E_PYTHON ${CD_E2E_PYTHON_SYS})
endif()
if(DEFINED ENV{CD_SHARED_MODELS})
  set(CD_E2E_SHARED $ENV{CD_SHARED_MODELS})
else()
  get_filename_component(CD_E2E_SHARED ${CMAKE_SOURCE_DIR}/../shared/models ABSOLUTE)
endif()
set(CD_E2E_ENV
  "CLDIFF=$<TARGET_FILE:cldiff>"
  "CD_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
  "CD_SHARED_MODELS=${CD_E2E_SHARED}"
  "CLDIFF_NO_PROGRESS=1"
  "NO_COLOR=1"
  "PYTHONDONTWRITEBYTECODE=1")

function(cd_e2e_test name script)
  add_test(NAME ${name} COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${script} ${ARGN}
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77
                       LABELS e2e TIMEOUT 600)
endfunction()

# One entry per shared model, so a failing model is named by ctest; the list is taken at
# configure time (re-run cmake after adding models). Without the folder: one skipped entry.
file(GLOB CD_E2E_MODELS ${CD_E2E_SHARED}/*.nb)
if(CD_E2E_MODELS)
  foreach(m ${CD_E2E_MODELS})
    get_filename_component(mn ${m} NAME)
    string(REGEX REPLACE "\\.nb$" "" tn ${mn})
    cd_e2e_test(e2e_model_${tn} test_models.py ${mn})
  endforeach()
else()
  cd_e2e_test(e2e_models test_models.py)
endif()

cd_e2e_test(e2e_pairs test_pairs.py)
cd_e2e_test(e2e_diff test_diff.py)
cd_e2e_test(e2e_planted test_planted.py)
# verdicts that cannot lie: one judge (report = live), incomplete/interrupted in every phase,
# foreign and damaged dumps (issue 27)
cd_e2e_test(e2e_verdict_states test_verdict_states.py)
cd_e2e_test(e2e_fused_fault test_fused_fault.py)
cd_e2e_test(e2e_backend_opts test_backend_opts.py)
# failure paths (pins, isolate, repro, rebuilt report) under the fault injector (tests/faultinj.cmake)
cd_e2e_test(e2e_fault_paths test_fault_paths.py $<TARGET_FILE:faultinj>)
# non-finite references, --calibrate under a fault, one-execution faults of any op type (issue 20)
cd_e2e_test(e2e_bounds_gaps test_bounds_gaps.py $<TARGET_FILE:faultinj>)
cd_e2e_test(e2e_errors test_errors.py)
# OpenCL programs built ahead of the run, several at a time, with a progress line (issue 29)
cd_e2e_test(e2e_cl_prebuild test_cl_prebuild.py $<TARGET_FILE:clshim>)
# run B's OpenCL child started before run A, answering the availability check (issue 29)
cd_e2e_test(e2e_diff_prestart test_diff_prestart.py $<TARGET_FILE:clshim>)
# --out holds one consistent run: failed starts and SIGINT leave it untouched (issue 27)
cd_e2e_test(e2e_outdir test_outdir.py)
cd_e2e_test(e2e_inputs test_inputs.py)
cd_e2e_test(e2e_int8_verdicts test_int8_verdicts.py)
cd_e2e_test(e2e_lenient_attrs test_lenient_attrs.py)
cd_e2e_test(e2e_lstm_rec test_lstm_rec.py)
cd_e2e_test(e2e_local_gaps test_local_gaps.py)
