# Installs the man pages of docs/man; run by `cmake --install` (an
# install(CODE) in CMakeLists.txt sets RL_MAN_SRC, the pages' directory,
# RL_MAN_DIR, the man directory, relative to the prefix or absolute, and
# RL_MAN_LINKS, a scratch directory in the build tree).
#
# An alias page (one ".so manN/page.N" line) is installed as a symlink to
# its page, as Debian's policy (12.1) prefers and dh_installman does:
# `.so` resolves from the current directory, so `man -l` on the installed
# alias failed anywhere but at the top of the man tree, while man(1) finds
# a symlink by its name as it did the alias. The pages are read here, at
# install time, so a new page or alias needs no reconfigure.
if(NOT IS_ABSOLUTE "${RL_MAN_DIR}")
    set(RL_MAN_DIR "${CMAKE_INSTALL_PREFIX}/${RL_MAN_DIR}")
endif()
file(GLOB _rl_pages "${RL_MAN_SRC}/*.[1-9]")
foreach(_rl_page IN LISTS _rl_pages)
    get_filename_component(_rl_name "${_rl_page}" NAME)
    string(REGEX REPLACE "^.*\\.([1-9])$" "\\1" _rl_sec "${_rl_name}")
    file(READ "${_rl_page}" _rl_head LIMIT 256)
    if(_rl_head MATCHES "^\\.so +man([1-9])/([^/\n]+)\n")
        # The target, relative to the alias's own directory.
        set(_rl_to "${CMAKE_MATCH_2}")
        if(NOT CMAKE_MATCH_1 STREQUAL _rl_sec)
            set(_rl_to "../man${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
        endif()
        set(_rl_page "${RL_MAN_LINKS}/man${_rl_sec}/${_rl_name}")
        file(MAKE_DIRECTORY "${RL_MAN_LINKS}/man${_rl_sec}")
        file(REMOVE "${_rl_page}")
        execute_process(COMMAND "${CMAKE_COMMAND}" -E create_symlink
            "${_rl_to}" "${_rl_page}" RESULT_VARIABLE _rl_rc)
        if(NOT _rl_rc EQUAL 0)
            message(FATAL_ERROR "cannot make the symlink ${_rl_page}")
        endif()
    endif()
    # file(INSTALL) keeps a symlink a symlink, applies DESTDIR and records
    # the file in install_manifest.txt, as install(FILES) does.
    file(INSTALL DESTINATION "${RL_MAN_DIR}/man${_rl_sec}" TYPE FILE
        FILES "${_rl_page}")
endforeach()
