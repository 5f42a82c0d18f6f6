# The bad-input corpus (tests/badinput/cases.txt, issue 27 point 5): about 160 command lines with
# bad options, models, inputs, dumps and output folders, each with the exit code and message
# expected (run_badinput.py). Fast: every case fails before a model runs; the fixtures are
# made from testdata (two CPU runs of the tiny models make the dumps). Needs .venv (numpy, h5py).
set(CD_BADINPUT_PY ${CMAKE_SOURCE_DIR}/.venv/bin/python)
if(NOT EXISTS ${CD_BADINPUT_PY})
  find_program(CD_BADINPUT_PY_SYS python3)
  set(CD_BADINPUT_PY ${CD_BADINPUT_PY_SYS})
endif()
add_test(NAME badinput
         COMMAND ${CD_BADINPUT_PY} ${CMAKE_CURRENT_SOURCE_DIR}/badinput/run_badinput.py $<TARGET_FILE:cldiff>
                 ${CMAKE_SOURCE_DIR})
set_tests_properties(badinput PROPERTIES LABELS e2e TIMEOUT 300 ENVIRONMENT "CLDIFF_NO_PROGRESS=1;NO_COLOR=1")
