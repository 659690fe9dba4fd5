# rl_lua_prune(OUT LIB BODY) sets OUT to the parts of LIB (lib.lua's
# text) that the script BODY uses, directly or through one another, in
# LIB's order, followed by BODY.
#
# Why: Redis runs a script's whole text on every call, and each local
# function the text defines is a closure made anew each time. With all of
# lib.lua in front, every script paid for sixteen of them (about 1 us of
# server time a call, measured with INFO commandstats), most never called.
#
# A part is the text from one top-level "local " line to the next (a
# function with the comment that follows it, which documents the next
# part: harmless either way). It is used when its name appears as a word
# in BODY or in a used part, comments left out; lib.lua's opening comment
# goes.
function(rl_lua_prune out lib body)
    set(_n 0)
    string(FIND "${lib}" "\nlocal " _p)
    if(_p EQUAL -1)
        message(FATAL_ERROR "lib.lua: no top-level local")
    endif()
    math(EXPR _p "${_p} + 1")
    string(SUBSTRING "${lib}" ${_p} -1 _rest)
    while(NOT _rest STREQUAL "")
        string(SUBSTRING "${_rest}" 1 -1 _tail)
        string(FIND "${_tail}" "\nlocal " _q)
        if(_q EQUAL -1)
            set(_part "${_rest}")
            set(_rest "")
        else()
            math(EXPR _q "${_q} + 2")
            string(SUBSTRING "${_rest}" 0 ${_q} _part)
            string(SUBSTRING "${_rest}" ${_q} -1 _rest)
        endif()
        if(NOT _part MATCHES "^local (function )?([A-Za-z_][A-Za-z0-9_]*)")
            message(FATAL_ERROR "lib.lua: cannot name the part: ${_part}")
        endif()
        set(_name_${_n} "${CMAKE_MATCH_2}")
        set(_part_${_n} "${_part}")
        set(_used_${_n} 0)
        math(EXPR _n "${_n} + 1")
    endwhile()
    # What is used so far, comments left out: names are looked for here.
    string(REGEX REPLACE "--[^\n]*" "" _scan "${body}")
    set(_more 1)
    while(_more)
        set(_more 0)
        set(_i 0)
        while(_i LESS _n)
            if(NOT _used_${_i} AND _scan MATCHES
                    "(^|[^A-Za-z0-9_])${_name_${_i}}([^A-Za-z0-9_]|$)")
                set(_used_${_i} 1)
                string(REGEX REPLACE "--[^\n]*" "" _code "${_part_${_i}}")
                string(APPEND _scan "\n${_code}")
                set(_more 1)
            endif()
            math(EXPR _i "${_i} + 1")
        endwhile()
    endwhile()
    set(_src "")
    set(_i 0)
    while(_i LESS _n)
        if(_used_${_i})
            string(APPEND _src "${_part_${_i}}")
        endif()
        math(EXPR _i "${_i} + 1")
    endwhile()
    set(${out} "${_src}${body}" PARENT_SCOPE)
endfunction()
