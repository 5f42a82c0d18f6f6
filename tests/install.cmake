# `cmake --install` into a temporary prefix: the installed binary's --version and --help,
# the documentation pages, the man page when help2man was found (CMakeLists.txt), and the
# Paddle-Lite helpers found by an installed and by an out-of-tree cldiff (cldiff doctor).
add_test(NAME install_prefix
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install/test_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}
                 "${CD_MAN_PAGE}")
set_tests_properties(install_prefix PROPERTIES LABELS install TIMEOUT 300)
