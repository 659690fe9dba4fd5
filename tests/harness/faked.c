#include "faked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

pid_t th_faked_start(const char *test, const char *const *env, int *out)
{
    const char *old = getenv("ASAN_OPTIONS");
    char asan[512];
    int fds[2];
    pid_t pid;
    size_t i;

    if (access(TH_FAKETIME_LIB, R_OK) != 0)
        test_fail_(__FILE__, __LINE__,
                   "%s is missing: apt-get install libfaketime",
                   TH_FAKETIME_LIB);
    ASSERT(pipe(fds) == 0);
    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        /* libfaketime comes first; ASan must not insist on being first. */
        snprintf(asan, sizeof asan, "%s%sverify_asan_link_order=0",
                 old ? old : "", old ? ":" : "");
        if (setenv("ASAN_OPTIONS", asan, 1) != 0 ||
            setenv("LD_PRELOAD", TH_FAKETIME_LIB, 1) != 0)
            _exit(126);
        for (i = 0; env != NULL && env[i] != NULL; i++)
            if (putenv((char *)env[i]) != 0)
                _exit(126);
        execl("/proc/self/exe", "rl-tests", "-v", test, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    *out = fds[0];
    return pid;
}

char *th_faked_finish(pid_t pid, int out, char *buf, size_t len)
{
    size_t got = 0;
    ssize_t n;
    int st;

    while (got + 1 < len && (n = read(out, buf + got, len - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(out);
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    fprintf(stderr, "--- the faked child ---\n%s", buf);
    ASSERT(WIFEXITED(st));
    ASSERT_EQ_INT(WEXITSTATUS(st), 0);
    ASSERT(strstr(buf, "1 passed, 0 failed") != NULL);
    return buf;
}
