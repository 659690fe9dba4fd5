/*
 * Memory per held lock: n plain locks taken by redislock against n keys
 * written by SET NX PX with a token of the same length (the footprint a
 * lock needs at least), each measured as the growth of INFO memory's
 * used_memory and of DBSIZE on an emptied server, then emptied again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "redislock.h"

/* Far past the measurement, so that nothing expires during it. */
#define MEM_TTL_MS 600000

static long long used_memory(redisContext *c)
{
    return lb_info_field(c, "memory", "used_memory");
}

static long long dbsize(redisContext *c)
{
    redisReply *r = lb_cmd(c, "DBSIZE");
    long long v = r->integer;

    freeReplyObject(r);
    return v;
}

static void flush(redisContext *c)
{
    freeReplyObject(lb_cmd(c, "FLUSHALL"));
}

/* n keys by SET NX PX, pipelined. */
static void raw_locks(redisContext *c, int n)
{
    char key[32], tok[40];
    redisReply *r;
    int i;

    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "mem:%d", i);
        snprintf(tok, sizeof tok, "rl1-%032x", (unsigned)i * 2654435761u);
        redisAppendCommand(c, "SET %s %s NX PX %d", key, tok, MEM_TTL_MS);
    }
    for (i = 0; i < n; i++) {
        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            lb_die("SET NX PX: %s", c->errstr);
        freeReplyObject(r);
    }
}

/* n locks taken by the library; each handle is freed held (the key stays
 * until its TTL). */
static int lib_locks(const lb_env *e, int n, char *err, size_t errlen)
{
    redislock_acquire_options o = {0};
    redislock_client *c;
    redislock_lock *l;
    char key[32];
    int i;

    o.ttl_ms = MEM_TTL_MS;
    if (redislock_client_new(&c, e->url, NULL) != REDISLOCK_OK) {
        snprintf(err, errlen, "%s", redislock_errdetail());
        return -1;
    }
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "mem:%d", i);
        if (redislock_lock_new(c, key, strlen(key), &l) != REDISLOCK_OK ||
            redislock_acquire(l, &o) != REDISLOCK_OK) {
            snprintf(err, errlen, "lock %d: %s", i, redislock_errdetail());
            redislock_lock_free(l);
            redislock_client_free(c);
            return -1;
        }
        redislock_lock_free(l);
    }
    redislock_client_free(c);
    return 0;
}

void lb_run_memory(const lb_env *e, lb_memory *m, int n)
{
    long long mem0, keys0;

    memset(m, 0, sizeof *m);
    m->n = n;
    flush(e->ctl);
    mem0 = used_memory(e->ctl);
    keys0 = dbsize(e->ctl);
    raw_locks(e->ctl, n);
    m->raw_bytes = (double)(used_memory(e->ctl) - mem0) / n;
    m->raw_keys = (double)(dbsize(e->ctl) - keys0) / n;
    flush(e->ctl);
    mem0 = used_memory(e->ctl);
    keys0 = dbsize(e->ctl);
    if (lib_locks(e, n, m->err, sizeof m->err) == 0) {
        m->lib_bytes = (double)(used_memory(e->ctl) - mem0) / n;
        m->lib_keys = (double)(dbsize(e->ctl) - keys0) / n;
        m->ok = 1;
    }
    flush(e->ctl);
}
