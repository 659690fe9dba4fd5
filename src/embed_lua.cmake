# Writes OUT: one rl__script per NAMES entry, with the parts of DIR/lib.lua
# it uses followed by DIR/NAME.lua as a C string and its SHA1 (what
# EVALSHA names it by). With KEYCHECK set to STRICT or REPORT (the
# REDISLOCK_LUA_KEYCHECK option), each script is first rewritten by
# lua_keycheck.cmake, and its SHA1 is that of the rewritten text.
# A script's KEYS are those its one rl_keys('...') call names (lib.lua),
# written out as keys.h's RL_KEY_* roles: the C side sends the keys in
# that order, so the two cannot drift apart.
set(_c "/* Generated from src/lua by embed_lua.cmake. Do not edit. */\n")
string(APPEND _c "#include \"script.h\"\n\n")
string(REPLACE "," ";" NAMES "${NAMES}")
# lib.lua holds the functions several scripts share; the parts of it a
# script uses go in front of it (lua_prune.cmake), so every script is
# still sent (and cached) whole.
file(READ ${DIR}/lib.lua _lib)
include(${CMAKE_CURRENT_LIST_DIR}/lua_prune.cmake)
if(KEYCHECK)
    include(${CMAKE_CURRENT_LIST_DIR}/lua_keycheck.cmake)
endif()
# rl_roles(OUT N LAYOUT ALLOWED NAME): OUT gets LAYOUT's roles (space
# separated) as keys.h's "RL_KEY_<ROLE>, " list and N their count; a role
# that does not match the regex ALLOWED stops the build, naming NAME.
function(rl_roles out n layout allowed name)
    string(REPLACE " " ";" _layout "${layout}")
    set(_r "")
    set(_k 0)
    foreach(_role ${_layout})
        if(NOT _role MATCHES "^(${allowed})$")
            message(FATAL_ERROR "${name}.lua: unknown key role '${_role}'")
        endif()
        string(TOUPPER "${_role}" _up)
        string(APPEND _r "RL_KEY_${_up}, ")
        math(EXPR _k "${_k} + 1")
    endforeach()
    set(${out} "${_r}" PARENT_SCOPE)
    set(${n} ${_k} PARENT_SCOPE)
endfunction()

# rl_role_fields(OUT LAYOUT FIRST KEYS): OUT gets a Lua table's fields
# numbering LAYOUT's roles from FIRST: "lock = KEYS[1], fence = KEYS[2], "
# with KEYS set to KEYS, "lock = 0, fence = 1, " with it empty.
function(rl_role_fields out layout first keys)
    string(REPLACE " " ";" _l "${layout}")
    set(_t "")
    set(_i ${first})
    foreach(_role ${_l})
        if(keys)
            string(APPEND _t "${_role} = ${keys}[${_i}], ")
        else()
            string(APPEND _t "${_role} = ${_i}, ")
        endif()
        math(EXPR _i "${_i} + 1")
    endforeach()
    set(${out} "${_t}" PARENT_SCOPE)
endfunction()

set(_each_ok "lock|fence|waiting|wake|rwake|q|ws|seq")
foreach(_name ${NAMES})
    file(READ ${DIR}/${_name}.lua _body)
    string(REGEX MATCHALL "rl_keys\\('[a-z ]*'\\)" _calls "${_body}")
    list(LENGTH _calls _ncalls)
    set(_roles "")
    set(_nroles 0)
    if(_ncalls EQUAL 1)
        string(REGEX REPLACE "rl_keys\\('([a-z ]*)'\\)" "\\1" _layout "${_calls}")
        rl_roles(_roles _nroles "${_layout}" "${_each_ok}|void|elect" ${_name})
        rl_role_fields(_table "${_layout}" 1 KEYS)
        # The same table, written out: no parsing of the layout each time
        # the script runs (rl_keys stays in lib.lua for the raw sources).
        string(REPLACE "${_calls}" "{${_table}}" _body "${_body}")
        string(APPEND _c "static const unsigned char rl__keys_${_name}[] = {${_roles}};\n")
        set(_keys "rl__keys_${_name}")
    elseif(_ncalls EQUAL 0)
        set(_keys "NULL")
    else()
        message(FATAL_ERROR "${_name}.lua: more than one rl_keys call")
    endif()
    # A set's script also names the keys of each further lock, after the
    # first's: rl_keys_each(<the first's count>, '<roles>').
    string(REGEX MATCHALL "rl_keys_each\\([0-9]+, '[a-z ]*'\\)" _each "${_body}")
    list(LENGTH _each _neach_calls)
    set(_each_roles "")
    set(_neach 0)
    if(_neach_calls EQUAL 1)
        string(REGEX REPLACE "rl_keys_each\\(([0-9]+), '([a-z ]*)'\\)" "\\1;\\2" _parts "${_each}")
        list(GET _parts 0 _first)
        list(GET _parts 1 _elayout)
        if(NOT _first EQUAL _nroles)
            message(FATAL_ERROR "${_name}.lua: rl_keys_each after ${_first} keys, rl_keys names ${_nroles}")
        endif()
        # A further lock has no void key: the request's is the first's.
        rl_roles(_each_roles _neach "${_elayout}" "${_each_ok}" ${_name})
        # The first lock's keys of each role sit where a further lock's
        # do (lib.lua's rl_set_key): its layout starts with these roles.
        if(_first GREATER 0)
            string(FIND "${_layout} " "${_elayout} " _at)
            if(NOT _at EQUAL 0)
                message(FATAL_ERROR "${_name}.lua: rl_keys must start with rl_keys_each's roles")
            endif()
        endif()
        # Written out as rl_set_of's arguments: no parsing each call.
        rl_role_fields(_fields "${_elayout}" 0 "")
        string(REPLACE "${_each}" "rl_set_of(${_first}, {${_fields}}, ${_neach})" _body "${_body}")
        string(APPEND _c "static const unsigned char rl__each_${_name}[] = {${_each_roles}};\n")
        set(_eachv "rl__each_${_name}")
    elseif(_neach_calls EQUAL 0)
        set(_eachv "NULL")
    else()
        message(FATAL_ERROR "${_name}.lua: more than one rl_keys_each call")
    endif()
    # abandon runs rarely and right after a failure, set_pass rarely and
    # after a refusal: sent whole, with EVAL.
    if(_name STREQUAL "abandon" OR _name STREQUAL "set_abandon" OR
       _name STREQUAL "set_pass")
        set(_eval 1)
    else()
        set(_eval 0)
    endif()
    # The script as a function of the library (below): its text runs in
    # a function that sets the library's KEYS and ARGV first. Not the
    # ones sent whole with EVAL, and none in a key-check build (whose
    # check wraps each script's own text).
    if(NOT KEYCHECK AND NOT _eval)
        string(APPEND _fns "redis.register_function('rl_${_name}_@RL_LIB@', "
               "function(k, a)\nKEYS, ARGV = k, a\nrl_begin()\n${_body}\nend)\n")
        set(_fname "\"rl_${_name}_@RL_LIB@\"")
    else()
        set(_fname "NULL")
    endif()
    rl_lua_prune(_src "${_lib}" "${_body}")
    if(KEYCHECK)
        rl_keycheck_wrap(_src "${_src}" ${_name} ${KEYCHECK})
    endif()
    string(SHA1 _sha "${_src}")
    string(REPLACE "\\" "\\\\" _esc "${_src}")
    string(REPLACE "\"" "\\\"" _esc "${_esc}")
    string(REPLACE "\n" "\\n\"\n    \"" _esc "${_esc}")
    string(APPEND _c "const rl__script rl__script_${_name} = {\n")
    string(APPEND _c "    \"${_name}\",\n    \"${_sha}\",\n    \"${_esc}\",\n    ${_eval},\n    ${_keys},\n    ${_nroles},\n    ${_eachv},\n    ${_neach},\n    ${_fname}\n};\n\n")
    string(APPEND _all "    &rl__script_${_name},\n")
endforeach()
# Every script, for the tests that check them all (a new one cannot be
# left out of their lists).
string(APPEND _c "const rl__script *const rl__scripts[] = {\n${_all}    NULL};\n")
# The scripts as one Redis Functions library (FUNCTION LOAD, FCALL):
# lib.lua whole, defined once when the library loads, where a script
# sent by EVALSHA makes every local function of its text anew on each
# call; then each script as a function. Its name, and its functions',
# end in the first 12 hex digits of its text's SHA1 (taken with the
# placeholder), so that clients of other versions load theirs beside it.
# Empty in a key-check build.
# A library's top level runs once: lib.lua's top-level state (a local
# that is neither a function nor an upper-case constant) must be reset by
# rl_begin at each call, or one call would see another's.
string(FIND "${_lib}" "\nlocal function rl_begin()\n" _b)
if(_b EQUAL -1)
    message(FATAL_ERROR "lib.lua: no rl_begin")
endif()
string(SUBSTRING "${_lib}" ${_b} -1 _begin)
string(FIND "${_begin}" "\nend\n" _e)
string(SUBSTRING "${_begin}" 0 ${_e} _begin)
string(REGEX MATCHALL "\nlocal [a-z_][a-z0-9_]*[ \n=]" _state "${_lib}")
foreach(_v ${_state})
    string(REGEX REPLACE "\nlocal ([a-z_][a-z0-9_]*).*" "\\1" _v "${_v}")
    if(NOT _v STREQUAL "function" AND NOT _begin MATCHES "${_v} = ")
        message(FATAL_ERROR "lib.lua: top-level state '${_v}' is not reset by rl_begin")
    endif()
endforeach()
set(_libtext "")
if(_fns)
    set(_libtext "#!lua name=redislock_@RL_LIB@\nlocal KEYS, ARGV\n${_lib}\n${_fns}")
    string(SHA1 _lsha "${_libtext}")
    string(SUBSTRING "${_lsha}" 0 12 _lsha)
    string(REPLACE "@RL_LIB@" "${_lsha}" _libtext "${_libtext}")
    string(REPLACE "@RL_LIB@" "${_lsha}" _c "${_c}")
endif()
string(REPLACE "\\" "\\\\" _esc "${_libtext}")
string(REPLACE "\"" "\\\"" _esc "${_esc}")
string(REPLACE "\n" "\\n\"\n    \"" _esc "${_esc}")
string(APPEND _c "const char rl__script_library[] =\n    \"${_esc}\";\n")
file(WRITE ${OUT} "${_c}")
