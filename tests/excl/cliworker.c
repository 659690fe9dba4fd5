/*
 * A section run by the CLI: the worker starts `redislock run` with the
 * section's TTL, wait and fairness, and a command that writes its
 * REDISLOCK_TOKEN to a file and then holds for hold_ms. The worker
 * watches: the token's file appearing is the acquire's return; while the
 * command runs it asks the server for the lease of that token every
 * CLI_TRUTH_EVERY_US. redislock run exits 75 when it killed its command
 * because it believed the lock lost; the worker then records a loss
 * (EXCL_L_KILLED) whose x is what was left, at that exit, of the lease
 * the server last reported held for the token (see watch_lease): a lease
 * the server was still keeping when the command was killed is a false
 * loss (live.c). The
 * command's belief is not recorded as a claim: the worker sees its start
 * and end only by polling, too late for the exclusion rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "excl_int.h"
#include "harness/util.h"

#define CLI_POLL_MS 5
#define CLI_TRUTH_EVERY_US 20000
/* redislock run's exit statuses: the lock not obtained in time, and the
 * command killed because the lock was lost (EX_TEMPFAIL). */
#define CLI_EXIT_CONFLICT 1
#define CLI_EXIT_LOST 75

typedef struct cli_run {
    pid_t pid;
    char tok_path[300];
    char token[128];
    int64_t seen_at;   /* the token's file seen: the acquire returned */
    int64_t lease_end; /* the lease's end the server last reported */
    int64_t read_at;   /* when it was read; 0: never */
    int64_t asked_at;  /* the last time the server was asked */
} cli_run;

#ifdef RL_CLI_PATH

static _Noreturn void cli_exec(const excl_worker *w, const excl_section *s,
                               const cli_run *cr)
{
    char ttl[32], wait[32], key[32], cmd[1100];
    int fd;

#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    for (fd = 3; fd < 1024; fd++)
        close(fd); /* the alive pipe among them: the parent waits for EOF */
    fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    snprintf(ttl, sizeof ttl, "%lldms", (long long)s->o.ttl_ms);
    snprintf(wait, sizeof wait, "%.3f", (double)s->o.wait_ms / 1000);
    excl_key_name(s->key, key, sizeof key);
    /* The file appears whole (mv), so a reader never sees half a token. */
    snprintf(cmd, sizeof cmd,
             "echo \"$REDISLOCK_TOKEN\" > '%s.tmp' && mv '%s.tmp' '%s' && "
             "exec sleep %.3f",
             cr->tok_path, cr->tok_path, cr->tok_path,
             (double)s->hold_ms / 1000);
    if (s->o.fair)
        execl(RL_CLI_PATH, RL_CLI_PATH, "-u", w->t->url[0], "run", "--fair",
              "-t", ttl, "-w", wait, key, "-c", cmd, (char *)NULL);
    else
        execl(RL_CLI_PATH, RL_CLI_PATH, "-u", w->t->url[0], "run", "-t", ttl,
              "-w", wait, key, "-c", cmd, (char *)NULL);
    _exit(127);
}

/* The token, once the command has written it. */
static int token_seen(cli_run *cr)
{
    FILE *f;
    size_t n;

    if (cr->seen_at != 0 || (f = fopen(cr->tok_path, "r")) == NULL)
        return cr->seen_at != 0;
    n = fread(cr->token, 1, sizeof cr->token - 1, f);
    fclose(f);
    while (n > 0 && (cr->token[n - 1] == '\n' || cr->token[n - 1] == ' '))
        n--;
    cr->token[n] = '\0';
    cr->seen_at = excl_now_us();
    return 1;
}

/* While the command runs: the end of the server's lease for its token,
 * as last seen held. Should redislock run kill the command, that lease
 * ended by expiring (then not after that end) or by the run's own
 * release after the kill: an end still ahead when the run exits means
 * the server kept the lease until the kill. */
static void watch_lease(excl_worker *w, const excl_section *s, cli_run *cr)
{
    int64_t now = excl_now_us(), pttl;

    if (now < cr->asked_at + CLI_TRUTH_EVERY_US)
        return;
    cr->asked_at = now;
    if (!excl_truth_kept(w, s->key, cr->token, 0, &pttl) || pttl <= 0)
        return;
    cr->read_at = now;
    cr->lease_end = now + pttl * 1000;
}

/* Waits for redislock run to exit; its status, or -1 when the run is
 * over (the CLI is then killed). */
static int cli_wait(excl_worker *w, excl_section *s, cli_run *cr,
                    excl_rec *a)
{
    int st;

    for (;;) {
        if (waitpid(cr->pid, &st, WNOHANG) == cr->pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (atomic_load(&w->sh->stop)) {
            kill(cr->pid, SIGKILL);
            waitpid(cr->pid, &st, 0);
            return -1;
        }
        if (cr->seen_at == 0 && token_seen(cr)) {
            a->t1 = cr->seen_at;
            a->x = REDISLOCK_OK;
            excl_history_add(w->t->hist_fd, a);
            atomic_store(&w->sh->slot[w->idx].state, EXCL_HOLDING);
        }
        if (cr->seen_at != 0)
            watch_lease(w, s, cr);
        th_sleep_ms(CLI_POLL_MS);
    }
}

/* What the exit status says: a release, a kill for a loss, or (before
 * the token was seen) the acquire's failure. */
static void cli_outcome(excl_worker *w, excl_section *s, cli_run *cr,
                        excl_rec *a, int code)
{
    int64_t now = excl_now_us();
    excl_rec r;

    if (cr->seen_at == 0) {
        a->t1 = now;
        a->x = code == CLI_EXIT_CONFLICT ? REDISLOCK_EHELD : REDISLOCK_EIO;
        excl_history_add(w->t->hist_fd, a);
        return;
    }
    if (code == CLI_EXIT_LOST) {
        excl_fill(w, s, &r, EXCL_LOSS);
        r.flags = EXCL_L_KILLED;
        r.belief = REDISLOCK_ELOST;
        r.t0 = now;
        r.t1 = cr->read_at;
        r.x = cr->read_at == 0 ? EXCL_PENDING
              : cr->lease_end > now ? (cr->lease_end - now) / 1000
                                    : -2;
        excl_history_add(w->t->hist_fd, &r);
        return;
    }
    excl_fill(w, s, &r, EXCL_RELEASE);
    r.t0 = r.t1 = now;
    r.x = code == 0 ? REDISLOCK_OK : REDISLOCK_EIO;
    excl_history_add(w->t->hist_fd, &r);
}

void excl_cli_section(excl_worker *w, excl_section *s)
{
    excl_slot *sl = &w->sh->slot[w->idx];
    cli_run cr;
    excl_rec a;
    int code;

    memset(&cr, 0, sizeof cr);
    snprintf(cr.tok_path, sizeof cr.tok_path, "%s.tok%d", w->t->hist, w->pid);
    unlink(cr.tok_path);
    atomic_store(&sl->key, s->key);
    atomic_store(&sl->fair, s->o.fair);
    atomic_store(&sl->state, EXCL_WAITING);
    w->acq++;
    excl_fill(w, s, &a, EXCL_ATTEMPT);
    a.flags = s->o.fair ? EXCL_A_FAIR : 0;
    a.belief = s->o.wait_ms;
    a.x = EXCL_PENDING;
    a.t0 = excl_now_us();
    excl_history_add(w->t->hist_fd, &a);
    fflush(NULL);
    cr.pid = fork();
    if (cr.pid == 0)
        cli_exec(w, s, &cr);
    if (cr.pid < 0)
        _exit(3);
    code = cli_wait(w, s, &cr, &a);
    if (code >= 0)
        cli_outcome(w, s, &cr, &a, code);
    atomic_store(&sl->state, EXCL_IDLE);
    unlink(cr.tok_path);
    th_sleep_ms(s->rest_ms);
}

#else

void excl_cli_section(excl_worker *w, excl_section *s)
{
    (void)s;
    fprintf(stderr, "excl: worker %d: built without the CLI\n", w->pid);
    _exit(4);
}

#endif
