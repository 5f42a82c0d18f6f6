# Costs: seconds on this loaded 2-core machine (tests/schedule.cmake explains COST).
# The recurrent family against Paddle itself (tests/recurrent/test_rnn_paddle.py): LSTM/GRU
# models made by Paddle 2.6.2 (.venv-paddle) and the Paddle-Lite wheel's Opt (.venv-pl) into
# <build>/recurrent-models, cldiff's CPU vs Paddle on every output, cpu,opencl fp32/fp16 PASS,
# and Paddle-Lite ARM's rnn final-state bug named a kernel fault. Skips (77) without the venvs.
add_test(NAME recurrent_paddle COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/recurrent/test_rnn_paddle.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(recurrent_paddle PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "e2e;lstm"
                     TIMEOUT 600 COST 60)
# The fp16 output floor (tests/recurrent/test_half_floor.py): a real detector's probability map
# below 2^-14 is not drift; planted sigmoids are still faults. Skips without ../shared/models.
add_test(NAME half_floor COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/recurrent/test_half_floor.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(half_floor PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "e2e;verdict"
                     TIMEOUT 600 COST 22)
# No local bound below the rounding of the values it judges, every family, on real models
# (tests/recurrent/test_bound_floor.py). Skips without ../shared/models.
add_test(NAME bound_floor COMMAND ${CD_E2E_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/recurrent/test_bound_floor.py
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(bound_floor PROPERTIES ENVIRONMENT "${CD_E2E_ENV}" SKIP_RETURN_CODE 77 LABELS "e2e;verdict"
                     TIMEOUT 900 COST 65)
