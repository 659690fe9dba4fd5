/*
 * script: release and extend run Lua as Redis Functions (FCALL), or by SHA
 * where FCALL is refused, and must survive a server that forgot them
 * (FUNCTION FLUSH, SCRIPT FLUSH, a restart, a failover). And the promise
 * of the API: an uncontended acquire plus release costs two commands.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/keysets.h"
#include "harness/server.h"
#include "script.h"
#include "test.h"

/* Whether this build calls the scripts as Functions: all but a key-check
 * build (REDISLOCK_LUA_KEYCHECK, which checks each script's own text and
 * sends it by EVALSHA). */
static int functions(void)
{
    return rl__script_library[0] != '\0';
}

typedef struct env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
    redislock_lock *l;
} env;

/* A server; with functions 0, one without FCALL (renamed away, as on a
 * server before 7.0), so that the scripts go by EVALSHA. */
static env env_start_fn(const char *key, int functions)
{
    th_server_opts o = {0};
    env e;

    if (!functions)
        o.extra_config = "rename-command FCALL \"\"";
    e.s = th_server_start(&o);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    e.l = th_lock(e.c, key);
    return e;
}

static env env_start(const char *key)
{
    return env_start_fn(key, 1);
}

static void env_stop(env *e)
{
    redislock_lock_free(e->l);
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

/* One acquire, extend and release, so that the server has the scripts. */
static void warm_up(env *e)
{
    ASSERT_OK(redislock_acquire(e->l, NULL));
    ASSERT_OK(redislock_extend(e->l, 10000));
    ASSERT_OK(redislock_release(e->l));
}

static void script_flush(env *e)
{
    freeReplyObject(th_cmd(e->r, "SCRIPT FLUSH"));
}

void test_script_noscript_release_fallback(void)
{
    env e = env_start_fn("sc:r", 0);

    warm_up(&e);
    ASSERT_OK(redislock_acquire(e.l, NULL));
    script_flush(&e);
    ASSERT_OK(redislock_release(e.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS sc:r"), 0);
    /* And once more, now that the script is back. */
    ASSERT_OK(redislock_acquire(e.l, NULL));
    ASSERT_OK(redislock_release(e.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS sc:r"), 0);
    env_stop(&e);
}

void test_script_noscript_extend_fallback(void)
{
    env e = env_start_fn("sc:x", 0);
    redislock_acquire_options o = th_aopts(2000, 0, 0);

    warm_up(&e);
    ASSERT_OK(redislock_acquire(e.l, &o));
    script_flush(&e);
    ASSERT_OK(redislock_extend(e.l, 20000));
    ASSERT_GT(th_pttl(e.r, "sc:x"), 19000);
    ASSERT_KEY(e.r, "sc:x", redislock_token(e.l));
    script_flush(&e);
    ASSERT_OK(redislock_release(e.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS sc:x"), 0);
    env_stop(&e);
}

static void function_flush(env *e)
{
    freeReplyObject(th_cmd(e->r, "FUNCTION FLUSH"));
}

/* The library gone mid-hold (FUNCTION FLUSH, a server that restarted
 * without it): the release and the extend load it again (FUNCTION LOAD
 * and the FCALL in one round trip) and work; the library is there
 * after, and no script went by EVALSHA or EVAL. (Where the server has
 * its own compare-and-delete, the release is that command and loads
 * nothing.) A key-check build sends
 * EVALSHA and loads no library: the flush changes nothing for it. */
void test_script_function_flushed(void)
{
    env e = env_start("sc:f");
    redislock_acquire_options o = th_aopts(2000, 0, 0);
    redisReply *rep;
    int native;

    warm_up(&e);
    freeReplyObject(th_cmd(e.r, "CONFIG RESETSTAT"));
    ASSERT_OK(redislock_acquire(e.l, &o));
    function_flush(&e);
    ASSERT_OK(redislock_extend(e.l, 20000));
    ASSERT_GT(th_pttl(e.r, "sc:f"), 19000);
    function_flush(&e);
    ASSERT_OK(redislock_release(e.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS sc:f"), 0);
    /* Where the server has its own compare-and-delete, the release is
     * that command: no script, nothing loaded for it. */
    native = th_native_release(e.r) != NULL;
    rep = th_cmd(e.r, "FUNCTION LIST");
    ASSERT_EQ_INT((long long)rep->elements, native ? 0 : functions());
    freeReplyObject(rep);
    ASSERT_EQ_INT(th_server_calls(e.r, "function|load"),
                  (native ? 1 : 2) * functions());
    ASSERT_EQ_INT(th_server_calls(e.r, "evalsha") +
                      th_server_calls(e.r, "eval"),
                  functions() ? 0 : native ? 2 : 3);
    ASSERT_EQ_INT(th_server_calls(e.r, "fcall") > 0, functions());
    env_stop(&e);
}

/* Commandstats deltas of SET and of script calls (FCALL, EVALSHA, EVAL)
 * between two snapshots. */
static void assert_calls(const th_cmdstats *before, const th_cmdstats *after,
                         long long set, long long scripts)
{
    ASSERT_EQ_INT(th_cmdstats_calls(after, "set") -
                      th_cmdstats_calls(before, "set"),
                  set);
    ASSERT_EQ_INT(th_cmdstats_scripts(after) - th_cmdstats_scripts(before),
                  scripts);
}

/*
 * The commands the library sent, in order, must be exactly want (space
 * separated). Commandstats alone cannot say "nothing else": it also counts
 * the GET/DEL/PEXPIRE that the scripts run inside the server.
 */
static void assert_sent(const th_monitor_log *log, const char *want)
{
    char got[512] = "";
    int i;

    for (i = 0; i < log->n; i++) {
        strcat(got, i ? " " : "");
        strcat(got, log->cmd[i]);
    }
    test_log("sent: %s (plus %d from scripts)", got, log->nlua);
    ASSERT_EQ_STR(got, want);
}

/* Records what one lock cycle (acquire, extends, release) sends. */
static void cycle(env *e, int extends, th_cmdstats *before, th_cmdstats *after,
                  th_monitor_log *log)
{
    th_monitor m;
    int i;

    th_cmdstats_read(e->r, before);
    th_monitor_start(&m, e->s);
    ASSERT_OK(redislock_acquire(e->l, NULL));
    for (i = 0; i < extends; i++)
        ASSERT_OK(redislock_extend(e->l, 10000));
    ASSERT_OK(redislock_release(e->l));
    th_monitor_stop(&m, e->r, log);
    th_cmdstats_read(e->r, after);
}

void test_script_round_trips(void)
{
    env e = env_start("sc:rt");
    th_cmdstats *before = malloc(sizeof *before);
    th_cmdstats *after = malloc(sizeof *after);
    th_monitor_log log;
    const char *native, *call;
    char want[64];

    ASSERT(before != NULL && after != NULL);
    warm_up(&e);

    /* The acquire script's SET NX PX and its fencing counter's SET run
     * inside the server: two SETs, one command sent. */
    cycle(&e, 0, before, after, &log);
    /* Where the server has its own compare-and-delete, an uncontended
     * release is that command instead of the script. */
    native = th_native_release(e.r);
    call = functions() ? "fcall" : "evalsha";
    snprintf(want, sizeof want, "%s %s", call, native ? native : call);
    cycle(&e, 0, before, after, &log);
    assert_calls(before, after, 2, native ? 1 : 2);
    assert_sent(&log, want);

    snprintf(want, sizeof want, "%s %s %s", call, call, native ? native : call);
    cycle(&e, 1, before, after, &log);
    assert_calls(before, after, 2, native ? 2 : 3);
    assert_sent(&log, want);

    /* Only the server's fencing counter is left, and only for the lock's
     * TTL plus a second. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "DBSIZE"), 1);
    ASSERT_LE(th_pttl(e.r, "sc:" TH_FENCE_COUNTER),
              REDISLOCK_DEFAULT_TTL_MS + 1000);
    free(before);
    free(after);
    env_stop(&e);
}
