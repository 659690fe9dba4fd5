# The key check of the REDISLOCK_LUA_KEYCHECK build option (see
# lua_keycheck.lua): rl_keycheck_wrap(OUT SRC NAME MODE) sets OUT to the
# script text SRC with every redis.call( and redis.pcall( sent through the
# checking wrappers, which go in front of its first line. MODE is STRICT
# (a violation fails the script) or REPORT (it is only logged).
#
# Alone, it writes one wrapped script (used by tests/cli/keycheck.sh):
#   cmake -DIN=x.lua -DNAME=x -DMODE=STRICT -DOUT=y.lua -P lua_keycheck.cmake
set(_rl_kc_dir ${CMAKE_CURRENT_LIST_DIR})

function(rl_keycheck_wrap out src name mode)
    if(mode STREQUAL "STRICT")
        set(_strict true)
    elseif(mode STREQUAL "REPORT")
        set(_strict false)
    else()
        message(FATAL_ERROR "key check mode ${mode}: want STRICT or REPORT")
    endif()
    file(READ ${_rl_kc_dir}/lua_keycheck.lua _pre)
    # One line: whole-line comments go, the lines are joined.
    string(REGEX REPLACE "(^|\n)[ \t]*--[^\n]*" "" _pre "${_pre}")
    string(REGEX REPLACE "\n[ \t]*" " " _pre "${_pre}")
    string(STRIP "${_pre}" _pre)
    if(_pre MATCHES "--")
        message(FATAL_ERROR "lua_keycheck.lua: a comment after code")
    endif()
    string(REPLACE "@RL_KC_SCRIPT@" "${name}" _pre "${_pre}")
    string(REPLACE "@RL_KC_STRICT@" "${_strict}" _pre "${_pre}")
    string(REPLACE "redis.call(" "rl_kc_call(" _src "${src}")
    string(REPLACE "redis.pcall(" "rl_kc_pcall(" _src "${_src}")
    # Any other use (a space before the parenthesis, redis.call kept in a
    # variable) would escape the check.
    string(REGEX REPLACE "(^|\n)[ \t]*--[^\n]*" "" _code "${_src}")
    if(_code MATCHES "redis\\.p?call")
        message(FATAL_ERROR "${name}: a redis.call or redis.pcall that is "
                "not called as redis.call( escapes the key check")
    endif()
    set(${out} "${_pre} ${_src}" PARENT_SCOPE)
endfunction()

if(DEFINED IN)
    file(READ ${IN} _in)
    rl_keycheck_wrap(_wrapped "${_in}" ${NAME} ${MODE})
    file(WRITE ${OUT} "${_wrapped}")
endif()
