/*
 * rl-tests: runs each test of test-list.h, and each shell script in
 * tests/cli, in its own forked process and process group, with a timeout.
 *
 *   rl-tests [-j N] [-v] [NAME...]    run all tests, or the named ones
 *   rl-tests --list                   print the test names
 *
 * A test passes when its process exits 0. Its output is captured and shown
 * when it fails (always with -v). The last line is "N passed, N failed";
 * the exit status is 1 when any test failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define CLI_TIMEOUT_S 60
#define MAX_JOBS 64

typedef struct test_case {
    const char *name;
    void (*fn)(void);
    const char *script; /* A tests/cli script, or NULL. */
    int timeout_s;
} test_case;

typedef struct job {
    const test_case *t;
    pid_t pid; /* 0: slot free. Also the process group id. */
    int64_t start_ms;
    int out_fd; /* The child's stdout and stderr, captured. */
    int timed_out;
    char dir[512]; /* The test's TMPDIR. */
} job;

static const test_case builtin[] = {
#define TEST_ENTRY(name, timeout_s) {#name, test_##name, NULL, timeout_s},
#include "test-list.h"
#undef TEST_ENTRY
};

static test_case *all;
static size_t nall;
static int verbose;
static char rundir[256];
static sigset_t waited;

/* SIGCHLD gets a handler, not SIG_DFL ("ignore"), so that it surely stays
 * pending for sigtimedwait() while blocked. */
static void on_sigchld(int sig)
{
    (void)sig;
}

static void die(const char *what)
{
    fprintf(stderr, "rl-tests: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void add_test(const test_case *t)
{
    test_case *p = realloc(all, (nall + 1) * sizeof *all);

    if (p == NULL)
        die("realloc");
    all = p;
    all[nall++] = *t;
}

static int is_script(const struct dirent *d)
{
    size_t n = strlen(d->d_name);

    return n > 3 && d->d_name[0] != '.' &&
           strcmp(d->d_name + n - 3, ".sh") == 0;
}

/* The shell scripts of tests/cli, found now so that new ones need no
 * rebuild; sorted by name. */
/* A script may raise its own limit with a line "# rl-tests-timeout: N"
 * (seconds) among its first lines: a full build or every man page takes
 * far longer on a loaded machine than one lock command, and the limit is
 * there to catch a hang, not to time the script. */
static int script_timeout(const char *script)
{
    FILE *f = fopen(script, "r");
    char line[256];
    int i, t = CLI_TIMEOUT_S;

    for (i = 0; f != NULL && i < 10 && fgets(line, sizeof line, f); i++)
        if (sscanf(line, "# rl-tests-timeout: %d", &t) == 1 && t > 0)
            break;
    if (f != NULL)
        fclose(f);
    return t > 0 ? t : CLI_TIMEOUT_S;
}

static void add_cli_tests(void)
{
    const char *dir = RL_SOURCE_DIR "/tests/cli";
    struct dirent **ents;
    int i, n = scandir(dir, &ents, is_script, alphasort);
    test_case t;
    size_t len;
    char *name, *script;

    for (i = 0; i < n; i++) {
        len = strlen(ents[i]->d_name);
        name = malloc(len + 2);
        script = malloc(strlen(dir) + len + 2);
        if (name == NULL || script == NULL)
            die("malloc");
        /* "cli_" replaces ".sh": one byte longer. */
        snprintf(name, len + 2, "cli_%.*s", (int)(len - 3), ents[i]->d_name);
        sprintf(script, "%s/%s", dir, ents[i]->d_name);
        t.name = name;
        t.script = script;
        t.fn = NULL;
        t.timeout_s = script_timeout(script);
        add_test(&t);
        free(ents[i]);
    }
    if (n >= 0)
        free(ents);
}

static const test_case *find_test(const char *name)
{
    size_t i;

    for (i = 0; i < nall; i++)
        if (strcmp(all[i].name, name) == 0)
            return &all[i];
    return NULL;
}

static void xsetenv(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0)
        test_fail_(__FILE__, __LINE__, "setenv %s: %s", name,
                   strerror(errno));
}

/* Exports what a CLI script needs to know about its server. */
static void cli_env(const th_server *s, const char *tmp)
{
    char port[16], *cli = th_which("redis-cli");

#ifdef RL_CLI_PATH
    xsetenv("REDISLOCK_BIN", RL_CLI_PATH);
#else
    test_fail_(__FILE__, __LINE__, "the CLI target was not built");
#endif
    snprintf(port, sizeof port, "%d", s->port);
    xsetenv("REDISLOCK_URL", s->unix_url);
    xsetenv("REDIS_SOCK", s->sock);
    xsetenv("REDIS_PORT", port);
    xsetenv("REDIS_CLI", cli ? cli : "redis-cli");
    xsetenv("PYTHON", "/usr/bin/python3");
    xsetenv("TEST_TMPDIR", tmp);
    xsetenv("SRCDIR", RL_SOURCE_DIR);
    xsetenv("BUILDDIR", RL_BUILD_DIR);
    free(cli);
}

/* The body of a cli_* test: a server, then /bin/sh script. */
static int run_script(const char *script)
{
    th_server *s = th_server_start(NULL);
    char *tmp = th_mkdtemp("rl-cli");
    pid_t pid;
    int st;

    if (tmp == NULL)
        test_fail_(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    cli_env(s, tmp);
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        test_fail_(__FILE__, __LINE__, "fork: %s", strerror(errno));
    if (pid == 0) {
        execl("/bin/sh", "sh", script, (char *)NULL);
        fprintf(stderr, "cannot run /bin/sh %s: %s\n", script,
                strerror(errno));
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            test_fail_(__FILE__, __LINE__, "waitpid: %s", strerror(errno));
    th_server_stop(s);
    th_rmtree(tmp);
    free(tmp);
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "%s: killed by signal %d\n", script, WTERMSIG(st));
        return 1;
    }
    return WEXITSTATUS(st);
}

/* In the forked child: its own group, output captured, then the test. */
static void child_main(const job *j)
{
    int fd = open("/dev/null", O_RDONLY);

    setpgid(0, 0);
    signal(SIGCHLD, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &waited, NULL);
    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);
        close(fd);
    }
    dup2(j->out_fd, STDOUT_FILENO);
    dup2(j->out_fd, STDERR_FILENO);
    close(j->out_fd);
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    if (setenv("TMPDIR", j->dir, 1) != 0)
        _exit(2);
    if (j->t->script != NULL)
        exit(run_script(j->t->script));
    j->t->fn();
    /* exit(), not _exit(): atexit stops servers and LSan checks leaks. */
    exit(0);
}

static void start_job(job *j, const test_case *t)
{
    static int serial;
    char path[512];

    memset(j, 0, sizeof *j);
    j->t = t;
    /* Numbered: a test named twice on the command line may run twice. */
    snprintf(j->dir, sizeof j->dir, "%s/%d.%s", rundir, ++serial, t->name);
    if (mkdir(j->dir, 0700) != 0)
        die(j->dir);
    snprintf(path, sizeof path, "%s/output.XXXXXX", rundir);
    j->out_fd = mkstemp(path);
    if (j->out_fd < 0)
        die("mkstemp");
    unlink(path);
    fflush(NULL);
    j->start_ms = th_now_ms();
    j->pid = fork();
    if (j->pid < 0)
        die("fork");
    if (j->pid == 0)
        child_main(j);
    /* Both sides set the group, so it exists whichever runs first. */
    setpgid(j->pid, j->pid);
}

/* Shows the captured output, each line indented. */
static void show_output(int fd)
{
    char buf[4096];
    ssize_t n, i;
    int bol = 1;

    if (lseek(fd, 0, SEEK_SET) != 0)
        return;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (i = 0; i < n; i++) {
            if (bol)
                fputs("    ", stdout);
            putchar(buf[i]);
            bol = buf[i] == '\n';
        }
    }
    if (!bol)
        putchar('\n');
}

/* Reports a job whose process was reaped with status st; 1 if it passed. */
static int finish_job(job *j, int st)
{
    int64_t ms = th_now_ms() - j->start_ms;
    int ok = !j->timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0;

    /* Reap what the test left behind: servers, workers, shells. */
    kill(-j->pid, SIGKILL);
    if (ok)
        printf("ok   %s (%lld ms)\n", j->t->name, (long long)ms);
    else if (j->timed_out)
        printf("FAIL %s (timeout after %d s)\n", j->t->name, j->t->timeout_s);
    else if (WIFEXITED(st))
        printf("FAIL %s (exit code %d)\n", j->t->name, WEXITSTATUS(st));
    else
        printf("FAIL %s (signal %d, %s)\n", j->t->name, WTERMSIG(st),
               strsignal(WTERMSIG(st)));
    if (!ok || verbose)
        show_output(j->out_fd);
    fflush(stdout);
    close(j->out_fd);
    th_rmtree(j->dir);
    j->pid = 0;
    return ok;
}

static job *find_job(job *jobs, int n, pid_t pid)
{
    int i;

    for (i = 0; i < n; i++)
        if (jobs[i].pid == pid)
            return &jobs[i];
    return NULL;
}

/* Kills the jobs past their deadline; returns ms to the next deadline. */
static int64_t check_timeouts(job *jobs, int n)
{
    int64_t now = th_now_ms(), next = 1000, left;
    int i;

    for (i = 0; i < n; i++) {
        if (jobs[i].pid == 0 || jobs[i].timed_out)
            continue;
        left = jobs[i].start_ms + jobs[i].t->timeout_s * 1000LL - now;
        if (left <= 0) {
            jobs[i].timed_out = 1;
            kill(-jobs[i].pid, SIGKILL);
        } else if (left < next) {
            next = left;
        }
    }
    return next;
}

static void kill_all(job *jobs, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (jobs[i].pid != 0) {
            kill(-jobs[i].pid, SIGKILL);
            waitpid(jobs[i].pid, NULL, 0);
        }
    }
}

/* Waits for a child to end, a deadline or a signal; reaps and reports.
 * Adds the passes to *passed; returns the number of jobs finished. */
static int wait_jobs(job *jobs, int n, int *passed)
{
    int64_t ms = check_timeouts(jobs, n);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    int sig = sigtimedwait(&waited, NULL, &ts), st, done = 0;
    pid_t pid;
    job *j;

    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        kill_all(jobs, n);
        th_rmtree(rundir);
        fprintf(stderr, "rl-tests: interrupted\n");
        exit(130);
    }
    /* Unknown pids are orphans handed to us as subreaper: just reaped. */
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        j = find_job(jobs, n, pid);
        if (j != NULL) {
            *passed += finish_job(j, st);
            done++;
        }
    }
    return done;
}

/* Runs the tests, at most njobs at a time; returns the number passed. */
static int run_tests(const test_case **sel, int nsel, int njobs)
{
    job jobs[MAX_JOBS];
    int next = 0, running = 0, passed = 0, i;

    memset(jobs, 0, sizeof jobs);
    while (next < nsel || running > 0) {
        for (i = 0; i < njobs && next < nsel; i++) {
            if (jobs[i].pid == 0) {
                start_job(&jobs[i], sel[next++]);
                running++;
            }
        }
        running -= wait_jobs(jobs, njobs, &passed);
    }
    return passed;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: rl-tests [-j N] [-v] [NAME...]\n"
               "       rl-tests --list\n");
}

/* Parses options, anywhere on the line; moves the test names to the
 * front of argv and returns how many there are, or -1 on a bad option. */
static int parse_args(int argc, char **argv, int *njobs)
{
    int i, nnames = 0;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-') {
            argv[nnames++] = argv[i];
        } else if (strcmp(a, "--list") == 0) {
            size_t k;
            for (k = 0; k < nall; k++)
                printf("%s\n", all[k].name);
            exit(0);
        } else if (strcmp(a, "-v") == 0) {
            verbose = 1;
        } else if (strncmp(a, "-j", 2) == 0) {
            const char *v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "");
            *njobs = atoi(v);
            if (*njobs < 1 || *njobs > MAX_JOBS)
                return -1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else {
            return -1;
        }
    }
    return nnames;
}

/* Adds every test whose name matches the glob pattern; how many. */
static int add_matching(const char *pattern, const test_case **sel, int *nsel)
{
    size_t k;
    int found = 0;

    for (k = 0; k < nall; k++)
        if (fnmatch(pattern, all[k].name, 0) == 0) {
            sel[(*nsel)++] = &all[k];
            found++;
        }
    return found;
}

/* The tests to run, in order: the named ones (a name may be a glob such
 * as 'watchdog_*'), or all. */
static const test_case **select_tests(int argc, char **argv, int *nsel)
{
    const test_case **sel = calloc(nall * ((size_t)argc + 1) + 1,
                                   sizeof *sel);
    int i;

    if (sel == NULL)
        die("calloc");
    *nsel = 0;
    if (argc == 0)
        for (i = 0; i < (int)nall; i++)
            sel[(*nsel)++] = &all[i];
    for (i = 0; i < argc; i++) {
        if (strpbrk(argv[i], "*?[") != NULL &&
            add_matching(argv[i], sel, nsel) > 0)
            continue;
        sel[*nsel] = find_test(argv[i]);
        if (sel[(*nsel)++] == NULL) {
            fprintf(stderr, "rl-tests: no test named %s\n", argv[i]);
            exit(2);
        }
    }
    return sel;
}

/* A private dir for the run; each test gets a subdir as its TMPDIR. */
static void make_rundir(void)
{
    snprintf(rundir, sizeof rundir, "%s/rl-tests.XXXXXX", th_tmpdir());
    if (mkdtemp(rundir) == NULL)
        die("mkdtemp");
}

int main(int argc, char **argv)
{
    const test_case **sel;
    int njobs = 1, nnames, nsel, passed;
    size_t i;

    for (i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        add_test(&builtin[i]);
    add_cli_tests();
    nnames = parse_args(argc, argv, &njobs);
    if (nnames < 0) {
        usage(stderr);
        return 2;
    }
    sel = select_tests(nnames, argv, &nsel);
#ifdef __linux__
    /* Orphans (a server whose test died) are reparented to us and reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    signal(SIGCHLD, on_sigchld);
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    sigaddset(&waited, SIGINT);
    sigaddset(&waited, SIGTERM);
    sigaddset(&waited, SIGHUP);
    sigprocmask(SIG_BLOCK, &waited, NULL);
    make_rundir();
    passed = run_tests(sel, nsel, njobs);
    th_rmtree(rundir);
    printf("%d passed, %d failed\n", passed, nsel - passed);
    free(sel);
    return passed == nsel ? 0 : 1;
}
