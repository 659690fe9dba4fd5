# rl_pc_libs_private(OUT ITEM...): the flags a static link against
# libredislock needs, for Libs.private of redislock.pc, as one string. An
# ITEM is a flag (-pthread) or the prefix of a module found by
# pkg_check_modules (HIREDIS), which stands for its static link flags.
# The order is kept (a library before those it needs), repeats are
# dropped, and so is -L of a directory the compiler searches anyway: CMake
# asks pkg-config to keep those, and a /usr/lib in a user's link line
# would come before the multiarch one.
function(rl_pc_libs_private out)
    set(flags)
    foreach(m ${ARGN})
        set(items "${m}")
        if(NOT m MATCHES "^-")
            set(items ${${m}_STATIC_LDFLAGS})
        endif()
        foreach(f ${items})
            if(f MATCHES "^-L(.*)$")
                get_filename_component(dir "${CMAKE_MATCH_1}" ABSOLUTE)
                list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES "${dir}" i)
                if(NOT i EQUAL -1)
                    continue()
                endif()
            endif()
            list(FIND flags "${f}" i)
            if(i EQUAL -1)
                list(APPEND flags "${f}")
            endif()
        endforeach()
    endforeach()
    string(REPLACE ";" " " flags "${flags}")
    set(${out} "${flags}" PARENT_SCOPE)
endfunction()
