# Read by ctest, not by cmake (tests/CMakeLists.txt names it in
# TEST_INCLUDE_FILES through a generated file that sets RL_TESTS_BIN): one
# CTest test per name `rl-tests --list` prints, each run as
# `rl-tests NAME`, in a process of its own with the runner's timeout and a
# private redis-server. The list is asked for whenever ctest reads the
# tests, so an entry added to test-list.h (after a build) or a script
# added to tests/cli (at once) is there without a reconfigure.
if(NOT EXISTS "${RL_TESTS_BIN}")
    # As gtest_discover_tests does: a test that fails, "Not Run".
    add_test(rl-tests_NOT_BUILT "${RL_TESTS_BIN}")
    return()
endif()
execute_process(COMMAND "${RL_TESTS_BIN}" --list
    OUTPUT_VARIABLE _rl_names RESULT_VARIABLE _rl_rc)
if(NOT _rl_rc EQUAL 0)
    message(WARNING "${RL_TESTS_BIN} --list failed (${_rl_rc})")
    add_test(rl-tests_LIST_FAILED "${RL_TESTS_BIN}" --list)
    return()
endif()
string(REGEX REPLACE "\n$" "" _rl_names "${_rl_names}")
string(REPLACE "\n" ";" _rl_names "${_rl_names}")
foreach(_rl_name IN LISTS _rl_names)
    add_test("${_rl_name}" "${RL_TESTS_BIN}" "${_rl_name}")
endforeach()
