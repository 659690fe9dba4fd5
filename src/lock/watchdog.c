#include "watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "topology.h"
#include "clock.h"
#include "env.h"
#include "error.h"
#include "lock.h"
#include "keyed.h"

/* A failed renewal is retried after a tenth of the TTL (at least this),
 * until the lease's validity runs out. */
#define RL_RETRY_MIN_US 5000

struct rl__watch {
    redislock_lock *lock; /* the lease's holder: passed back, never read */
    const rl__lease *lease;
    int64_t ttl_ms;
    rl__watchdog *wd;
    int64_t next_us;    /* when to renew next */
    int64_t started_us; /* when the lock was acquired */
    int64_t max_hold_us;
    int renewals;
    int max_renewals;
    int linked;  /* still in the watchdog's list */
    int oneshot; /* one renewal, then done (and no loss report after) */
    int busy;    /* the thread is renewing it right now */
    /* The last renewal's failure, while it is retried (0: none). */
    redislock_err failed;
    char failed_why[200];
    int efd;
    redislock_lost_cb cb;
    void *cb_arg;
    struct rl__watch *next;
};

/* A clean-up job: see rl__janitor_abandon. Owned by the watchdog. */
struct rl__job {
    rl__topo *topo;
    rl__pool *pool; /* a Redlock server; NULL: where topo sends key */
    rl__pool *node; /* the node its timeouts come from */
    int64_t next_us, give_up_us, ttl_ms;
    rl__lockname *names; /* the lock's, or a set's; strings in the same */
    int nnames;          /* allocation */
    char token[RL_TOKEN_MAX + 1];
    char req[RL_TOKEN_MAX + 1];
    struct rl__job *next;
};

/* A job's try waits no longer than this: a stalled server must not hold up
 * the renewals of other locks on the same thread. */
#define RL_JOB_TIMEOUT_MS 100
#define RL_JOB_RETRY_US 50000

struct rl__watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    struct rl__watch *head;
    struct rl__job *jobs;
    /* The job being tried right now, out of jobs while the mutex is
     * released: stopping must wait for it as for the others. */
    struct rl__job *running;
    /* When the sleeping thread wakes by itself (INT64_MAX: only when
     * signalled; 0: it is awake). New work due later needs no wake-up: a
     * hand-off's one-renewal watch must not cost a context switch. */
    int64_t sleep_until;
    int stop;
    /* Once stopped, clean-up jobs still run until this (CLOCK_MONOTONIC):
     * a process that frees its client right after a lost acquire reply
     * must not leave the lock held by nobody. */
    int64_t drain_until;
};

/* What one renewal attempt decided. */
typedef enum { KEEP, DROP } verdict;

static void unlink_watch(rl__watchdog *wd, struct rl__watch *w)
{
    struct rl__watch **p;

    for (p = &wd->head; *p != NULL; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->linked = 0;
}

static struct rl__watch *earliest(const rl__watchdog *wd)
{
    struct rl__watch *w, *best = NULL;

    for (w = wd->head; w != NULL; w = w->next)
        if (!w->busy && (best == NULL || w->next_us < best->next_us))
            best = w;
    return best;
}

/* Tells the holder, once: state (redislock_check, redislock_valid_ms),
 * the eventfd, then the callback. */
static void report_loss(struct rl__watch *w, redislock_err why)
{
    uint64_t one = 1;

    if (!w->lease->lost(w->lock, why))
        return;
    while (w->efd >= 0 && write(w->efd, &one, sizeof one) < 0 && errno == EINTR)
        ;
    if (w->cb != NULL)
        w->cb(w->lock, why, w->cb_arg);
}

static int capped(const struct rl__watch *w, int64_t now)
{
    return (w->max_renewals > 0 && w->renewals >= w->max_renewals) ||
           (w->max_hold_us > 0 && now - w->started_us >= w->max_hold_us);
}

/* Renewals failed (a timeout, say) until the validity ran out: for the
 * holder that is an expiry, as redislock_check() already says; the
 * detail keeps the last renewal's error. */
static redislock_err failed_loss(const struct rl__watch *w)
{
    return rl__err(REDISLOCK_EEXPIRED,
                   "renewals failed until the validity ran out (last: %s: "
                   "%s)",
                   redislock_errname(w->failed), w->failed_why);
}

/* What a renewal's outcome err means for the watch: KEEP (its next
 * renewal set) or DROP (over: the loss reported, or a one-shot done). */
static verdict renewed(struct rl__watch *w, redislock_err err)
{
    redislock_lock *l = w->lock;
    int64_t now = rl__now_us(), valid;
    int64_t period = w->ttl_ms * 1000 / 3, retry;

    w->failed = err;
    if (err == REDISLOCK_OK) {
        w->renewals++;
        w->next_us = now + period;
        return w->oneshot ? DROP : KEEP;
    }
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST) {
        report_loss(w, err);
        return DROP;
    }
    snprintf(w->failed_why, sizeof w->failed_why, "%s", redislock_errdetail());
    if (now >= (valid = w->lease->valid_until(l))) {
        report_loss(w, failed_loss(w));
        return DROP;
    }
    /* A transient failure: try again soon, but not past the validity, at
     * which point the lock counts as lost (rl__watch_before). */
    retry = w->ttl_ms * 100;
    w->next_us = now + (retry > RL_RETRY_MIN_US ? retry : RL_RETRY_MIN_US);
    if (w->next_us > valid)
        w->next_us = valid;
    return KEEP;
}

rl__renew_step rl__watch_before(rl__watch *w)
{
    int64_t now = rl__now_us(), valid = w->lease->valid_until(w->lock);

    if (now >= valid) {
        /* No renewal goes once the validity has run out: the holder must
         * count the lock as lost, and a renewal could only lengthen, on
         * the server, a lease nobody holds any more. Either renewals
         * failed until then, or the cap stopped them, or they were held
         * up past it (the process was stopped, or this thread kept
         * busy). */
        if (w->failed != REDISLOCK_OK)
            report_loss(w, failed_loss(w));
        else if (capped(w, now))
            report_loss(w, REDISLOCK_EEXPIRED);
        else
            report_loss(w, rl__err(REDISLOCK_EEXPIRED,
                                   "the lease ran out %lld ms before its "
                                   "renewal could be sent (the process or "
                                   "its watchdog was held up)",
                                   (long long)((now - valid) / 1000)));
        return RL_RENEW_DROP;
    }
    if (!capped(w, now))
        return RL_RENEW_SEND;
    /* No more renewals: the lease runs out at its validity. */
    w->next_us = valid;
    return RL_RENEW_KEEP;
}

rl__renew_step rl__watch_after(rl__watch *w, redislock_err err)
{
    return renewed(w, err) == KEEP ? RL_RENEW_KEEP : RL_RENEW_DROP;
}

int64_t rl__watch_due(const rl__watch *w)
{
    return w->next_us;
}

/* One due renewal, run without the watchdog's mutex. */
static verdict renew(struct rl__watch *w)
{
    rl__renew_step step = rl__watch_before(w);

    if (step != RL_RENEW_SEND)
        return step == RL_RENEW_KEEP ? KEEP : DROP;
    return renewed(w, w->lease->renew(w->lock));
}

static void wait_until(rl__watchdog *wd, int64_t when_us)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(when_us / 1000000);
    ts.tv_nsec = (long)(when_us % 1000000) * 1000;
    wd->sleep_until = when_us;
    pthread_cond_timedwait(&wd->cv, &wd->mu, &ts);
    wd->sleep_until = 0;
}

static struct rl__job *earliest_job(const rl__watchdog *wd)
{
    struct rl__job *j, *best = NULL;

    for (j = wd->jobs; j != NULL; j = j->next)
        if (best == NULL || j->next_us < best->next_us)
            best = j;
    return best;
}

/* Runs a due job without the mutex; puts it back to retry, or frees it. */
static void run_job(rl__watchdog *wd, struct rl__job *j)
{
    struct rl__job **p;
    redislock_err err;

    for (p = &wd->jobs; *p != j; p = &(*p)->next)
        ;
    *p = j->next;
    wd->running = j;
    pthread_mutex_unlock(&wd->mu);
    err = rl__abandon(j->topo, j->pool, j->names, j->nnames, j->token, j->req,
                      j->ttl_ms, RL_JOB_TIMEOUT_MS);
    pthread_mutex_lock(&wd->mu);
    wd->running = NULL;
    if (!rl__abandon_again(err) || rl__now_us() >= j->give_up_us) {
        free(j);
        return;
    }
    j->next_us = rl__now_us() + RL_JOB_RETRY_US;
    j->next = wd->jobs;
    wd->jobs = j;
}

static void *run(void *arg)
{
    rl__watchdog *wd = arg;
    struct rl__watch *w;
    struct rl__job *j;

    pthread_mutex_lock(&wd->mu);
    while (!wd->stop || (wd->jobs != NULL && rl__now_us() < wd->drain_until)) {
        /* Stopping: no more renewals (every lock is unwatched), only the
         * clean-up jobs left. */
        w = wd->stop ? NULL : earliest(wd);
        j = earliest_job(wd);
        if (j != NULL && (w == NULL || j->next_us < w->next_us)) {
            if (j->next_us > rl__now_us())
                wait_until(wd, j->next_us);
            else
                run_job(wd, j);
            continue;
        }
        if (w == NULL) {
            wd->sleep_until = INT64_MAX;
            pthread_cond_wait(&wd->cv, &wd->mu);
            wd->sleep_until = 0;
            continue;
        }
        if (w->next_us > rl__now_us()) {
            wait_until(wd, w->next_us);
            continue;
        }
        w->busy = 1;
        pthread_mutex_unlock(&wd->mu);
        verdict v = renew(w);
        pthread_mutex_lock(&wd->mu);
        w->busy = 0;
        if (v == DROP)
            unlink_watch(wd, w);
        pthread_cond_broadcast(&wd->cv);
    }
    pthread_mutex_unlock(&wd->mu);
    return NULL;
}

redislock_err rl__watchdog_new(rl__watchdog **out)
{
    rl__watchdog *wd = calloc(1, sizeof *wd);
    pthread_condattr_t attr;

    *out = NULL;
    if (wd == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    pthread_mutex_init(&wd->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&wd->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&wd->thread, NULL, run, wd) != 0) {
        pthread_cond_destroy(&wd->cv);
        pthread_mutex_destroy(&wd->mu);
        free(wd);
        return rl__err(REDISLOCK_ENOMEM, "cannot start the watchdog thread");
    }
    *out = wd;
    return REDISLOCK_OK;
}

redislock_err rl__env_watchdog(rl__env *e, rl__watchdog **out)
{
    redislock_err err = REDISLOCK_OK;

    pthread_mutex_lock(&e->mu);
    if (e->watchdog == NULL)
        err = rl__watchdog_new(&e->watchdog);
    *out = e->watchdog;
    pthread_mutex_unlock(&e->mu);
    return err;
}

static int64_t job_time_ms(const struct rl__job *j)
{
    return j->node->cfg.connect_timeout_ms + j->node->cfg.command_timeout_ms;
}

/* How long stopping may wait for clean-up jobs: one connect and one
 * command on the slowest of their servers. The one being tried counts:
 * a process that frees its client while the first abandon of a lost
 * acquire is under way (the server slow to answer) would otherwise exit
 * before the abandon got through, and the late request could take the
 * lock, or add a hold an owner's next acquire cannot tell from its own. */
static int64_t drain_time_us(const rl__watchdog *wd)
{
    const struct rl__job *j;
    int64_t most = wd->running != NULL ? job_time_ms(wd->running) : 0;

    for (j = wd->jobs; j != NULL; j = j->next)
        if (job_time_ms(j) > most)
            most = job_time_ms(j);
    return most * 1000;
}

void rl__watchdog_free(rl__watchdog *wd)
{
    if (wd == NULL)
        return;
    pthread_mutex_lock(&wd->mu);
    wd->drain_until = rl__now_us() + drain_time_us(wd);
    wd->stop = 1;
    pthread_cond_broadcast(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    pthread_join(wd->thread, NULL);
    while (wd->jobs != NULL) {
        struct rl__job *j = wd->jobs;
        wd->jobs = j->next;
        free(j);
    }
    pthread_cond_destroy(&wd->cv);
    pthread_mutex_destroy(&wd->mu);
    free(wd);
}

redislock_err rl__watch_start(rl__watchdog *wd, const rl__lease *lease,
                              redislock_lock *l, int64_t ttl_ms,
                              const redislock_acquire_options *o,
                              int64_t sent_us, int64_t first_us,
                              rl__watch **out)
{
    struct rl__watch *w = calloc(1, sizeof *w);

    if (w == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    /* A one-renewal watch (a short hand-off lease) reports no loss; a
     * watch its caller drives (an event loop's, which may have thousands)
     * reports it by the callback and validity only. */
    w->efd =
        o->watchdog && wd != NULL ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
    if (o->watchdog && wd != NULL && w->efd < 0) {
        free(w);
        return rl__err(REDISLOCK_ENOMEM, "cannot make an eventfd");
    }
    w->lock = l;
    w->lease = lease;
    w->ttl_ms = ttl_ms;
    w->wd = wd;
    w->started_us = sent_us;
    w->next_us = first_us ? first_us : sent_us + ttl_ms * 1000 / 3;
    w->oneshot = !o->watchdog;
    w->max_hold_us = o->max_hold_ms * 1000;
    w->max_renewals = o->max_renewals;
    w->cb = o->on_lost;
    w->cb_arg = o->on_lost_arg;
    *out = w;
    if (wd == NULL)
        return REDISLOCK_OK;
    w->linked = 1;
    pthread_mutex_lock(&wd->mu);
    w->next = wd->head;
    wd->head = w;
    if (w->next_us < wd->sleep_until)
        pthread_cond_broadcast(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
    return REDISLOCK_OK;
}

void rl__watch_stop(rl__watch *w)
{
    rl__watchdog *wd;

    if (w == NULL)
        return;
    if ((wd = w->wd) != NULL) {
        pthread_mutex_lock(&wd->mu);
        while (w->busy)
            pthread_cond_wait(&wd->cv, &wd->mu);
        if (w->linked)
            unlink_watch(wd, w);
        pthread_mutex_unlock(&wd->mu);
    }
    if (w->efd >= 0)
        close(w->efd);
    free(w);
}

int rl__watch_efd(const rl__watch *w)
{
    return w != NULL ? w->efd : -1;
}

void rl__janitor_abandon(rl__watchdog *wd, rl__topo *t, rl__pool *p,
                         const rl__lockname *names, int n, const char *token,
                         const char *req, int64_t ttl_ms)
{
    size_t size = sizeof(struct rl__job) + (size_t)n * sizeof(rl__lockname);
    struct rl__job *j;
    char *at;
    int i;

    for (i = 0; i < n; i++)
        size += names[i].keylen + names[i].baselen;
    if ((j = calloc(1, size)) == NULL)
        return;
    j->topo = t;
    j->pool = p;
    /* A cluster's pools live as long as the cluster (cluster.h). The node
     * gives the job's timeouts only (the abandon goes where the topology
     * routes it then): the one known now, which asks no sentinel, so
     * that a loop handing its sweeps over does not block. */
    j->node =
        p != NULL ? p : rl__topo_node_now(t, names[0].key, names[0].keylen);
    j->names = (rl__lockname *)(void *)(j + 1);
    j->nnames = n;
    at = (char *)(j->names + n);
    for (i = 0; i < n; i++) {
        memcpy(at, names[i].key, names[i].keylen);
        j->names[i].key = at;
        j->names[i].keylen = names[i].keylen;
        at += names[i].keylen;
        memcpy(at, names[i].base, names[i].baselen);
        j->names[i].base = at;
        j->names[i].baselen = names[i].baselen;
        at += names[i].baselen;
    }
    snprintf(j->token, sizeof j->token, "%s", token);
    snprintf(j->req, sizeof j->req, "%s", req);
    j->ttl_ms = ttl_ms;
    j->next_us = rl__now_us();
    j->give_up_us = j->next_us + (ttl_ms + 60000) * 1000;
    pthread_mutex_lock(&wd->mu);
    j->next = wd->jobs;
    wd->jobs = j;
    pthread_cond_broadcast(&wd->cv);
    pthread_mutex_unlock(&wd->mu);
}
