/*
 * instr SOCK KIND N: N uncontended acquire+release cycles of one kind on
 * the server at the unix socket SOCK, nothing else; bench/instr.sh runs
 * it against a server under callgrind, whose instruction count around
 * the cycles is the figure (user-space instructions: noise-free, where
 * the server's CPU time on a shared VM moves by a fifth between rounds).
 *
 * Kinds: raw (SET NX PX and a compare-and-delete script by EVALSHA, the
 * minimal raw loop of make bench), rawnative (SET NX PX and the server's
 * own compare-and-delete, DELIFEQ or DELEX, where it has one), plain,
 * fair, sem (a semaphore of 8), shared, set (8 keys).
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "redislock.h"

static const char *const set_keys[8] = {
    "bench:instr:s0", "bench:instr:s1", "bench:instr:s2", "bench:instr:s3",
    "bench:instr:s4", "bench:instr:s5", "bench:instr:s6", "bench:instr:s7"};

static redisReply *must(redisContext *c, redisReply *r, const char *what)
{
    if (r == NULL)
        lb_die("%s: %s", what, c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        lb_die("%s: %s", what, r->str);
    return r;
}

/* The server's own compare-and-delete: "DELIFEQ", "DELEX" or NULL. */
static const char *native_cad(redisContext *c)
{
    redisReply *r =
        must(c, redisCommand(c, "COMMAND INFO DELIFEQ DELEX"), "COMMAND INFO");
    const char *cmd = NULL;

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        if (r->element[0]->type == REDIS_REPLY_ARRAY)
            cmd = "DELIFEQ";
        else if (r->element[1]->type == REDIS_REPLY_ARRAY)
            cmd = "DELEX";
    }
    freeReplyObject(r);
    return cmd;
}

static void raw(const char *sock, const char *kind, long n)
{
    redisContext *c = redisConnectUnix(sock);
    const char *cad = NULL;
    char sha[41] = "", tok[40];
    redisReply *r;
    long i;

    if (c == NULL || c->err)
        lb_die("connect %s: %s", sock, c ? c->errstr : "out of memory");
    if (strcmp(kind, "rawnative") == 0 && (cad = native_cad(c)) == NULL)
        lb_die("this server has no compare-and-delete of its own");
    if (cad == NULL) {
        r = must(c, redisCommand(c, "SCRIPT LOAD %s", LB_CAD), "SCRIPT LOAD");
        snprintf(sha, sizeof sha, "%s", r->str);
        freeReplyObject(r);
    }
    for (i = 0; i < n; i++) {
        snprintf(tok, sizeof tok, "raw-%ld", i);
        freeReplyObject(must(
            c,
            redisCommand(c, "SET %s %s NX PX %d", LB_LOCK_KEY, tok, LB_TTL_MS),
            "SET NX PX"));
        if (cad == NULL)
            r = redisCommand(c, "EVALSHA %s 1 %s %s", sha, LB_LOCK_KEY, tok);
        else if (strcmp(cad, "DELIFEQ") == 0)
            r = redisCommand(c, "DELIFEQ %s %s", LB_LOCK_KEY, tok);
        else
            r = redisCommand(c, "DELEX %s IFEQ %s", LB_LOCK_KEY, tok);
        freeReplyObject(must(c, r, "compare-and-delete"));
    }
    redisFree(c);
}

int main(int argc, char **argv)
{
    redislock_acquire_options o = {0};
    redislock_client *c;
    redislock_lock *l;
    redislock_err err;
    size_t lens[8];
    char url[300];
    long n = 0, i;
    int k;

    if (argc != 4 || (n = atol(argv[3])) <= 0)
        lb_die("usage: instr SOCK raw|rawnative|plain|fair|sem|shared|set N");
    if (strncmp(argv[2], "raw", 3) == 0) {
        raw(argv[1], argv[2], n);
        return 0;
    }
    snprintf(url, sizeof url, "unix://%s", argv[1]);
    if ((err = redislock_client_new(&c, url, NULL)) != REDISLOCK_OK)
        lb_die("%s: %s", url, redislock_errdetail());
    o.ttl_ms = LB_TTL_MS;
    o.fair = strcmp(argv[2], "fair") == 0;
    o.limit = strcmp(argv[2], "sem") == 0 ? 8 : 0;
    o.shared = strcmp(argv[2], "shared") == 0;
    if (strcmp(argv[2], "set") == 0) {
        for (k = 0; k < 8; k++)
            lens[k] = strlen(set_keys[k]);
        err = redislock_lock_new_multi(c, (const void *const *)set_keys, lens,
                                       8, &l);
    } else if (o.fair || o.limit || o.shared || strcmp(argv[2], "plain") == 0) {
        err = redislock_lock_new(c, LB_LOCK_KEY, strlen(LB_LOCK_KEY), &l);
    } else {
        lb_die("unknown kind %s", argv[2]);
    }
    if (err != REDISLOCK_OK)
        lb_die("lock: %s", redislock_errdetail());
    for (i = 0; i < n; i++)
        if ((err = redislock_acquire(l, &o)) != REDISLOCK_OK ||
            (err = redislock_release(l)) != REDISLOCK_OK)
            lb_die("%s cycle: %s (%s)", argv[2], redislock_strerror(err),
                   redislock_errdetail());
    redislock_lock_free(l);
    redislock_client_free(c);
    return 0;
}
