#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Per thread, because one client serves many threads at once. */
static _Thread_local char detail[512];

redislock_err rl__err(redislock_err err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return err;
}

/*
 * The error replies that ask the caller for something other than a bug
 * report: each names the problem and what to do. A class matches the
 * reply's first word (Redis's error code) exactly, or a phrase anywhere
 * in it (servers that put no code of their own, and errors a script
 * passes on inside "ERR ...").
 */
typedef struct reply_class {
    const char *code;   /* the first word; NULL: match phrase */
    const char *phrase; /* used when code is NULL */
    redislock_err err;
    /* NULL: the reply's words after the code, our script's, say it
     * better than a class could (what is asked against what the key
     * is), and the script's name, which is no business of the caller's,
     * is left out. */
    const char *problem;
    const char *fix;
} reply_class;

#define RL_FIX_AUTH "check the user name and password"
#define RL_FIX_ACL                                                             \
    "grant the user the commands and key patterns of the rule under ACL in "   \
    "redislock(3)"
#define RL_FIX_MASTER "point the client at the master"

static const reply_class classes[] = {
    {"NOAUTH", NULL, REDISLOCK_EAUTH, "Redis wants a password",
     "give it in the URL, the options or REDISCLI_AUTH"},
    {"WRONGPASS", NULL, REDISLOCK_EAUTH, "Redis refused the credentials",
     RL_FIX_AUTH},
    {NULL, "invalid password", REDISLOCK_EAUTH, "Redis refused the credentials",
     RL_FIX_AUTH},
    {NULL, "invalid username-password", REDISLOCK_EAUTH,
     "Redis refused the credentials", RL_FIX_AUTH},
    {"NOPERM", NULL, REDISLOCK_ENOPERM, "the user's ACL refuses this call",
     RL_FIX_ACL},
    /* Redis 6 and 7 say so when a script runs a command the user lacks. */
    {NULL, "user executing the script can't", REDISLOCK_ENOPERM,
     "the user's ACL refuses a command the script runs", RL_FIX_ACL},
    /* Redis 7.2 and later (8.x) and Valkey say it this way. */
    {NULL, "ACL failure in script", REDISLOCK_ENOPERM,
     "the user's ACL refuses a command the script runs", RL_FIX_ACL},
    {"READONLY", NULL, REDISLOCK_EREADONLY, "the server is a read-only replica",
     RL_FIX_MASTER},
    /* A replica with replica-serve-stale-data no whose master is gone:
     * once the link is back it answers READONLY, so waiting never helps
     * a client that writes. */
    {"MASTERDOWN", NULL, REDISLOCK_EREADONLY,
     "the server is a replica that has lost its master", RL_FIX_MASTER},
    {"LOADING", NULL, REDISLOCK_ETRYLATER,
     "the server is still loading its data", "try again once it has loaded"},
    {"BUSY", NULL, REDISLOCK_ETRYLATER,
     "the server is busy running a slow script",
     "try again later (SCRIPT KILL ends the script)"},
    /* Keys expire (locks too), so memory can come back by itself; the
     * commands that free it (DEL in a release) still run meanwhile. */
    {"OOM", NULL, REDISLOCK_ETRYLATER,
     "the server is at maxmemory and evicts nothing",
     "try again when memory is freed, or raise maxmemory"},
    {"NOREPLICAS", NULL, REDISLOCK_ETRYLATER,
     "too few replicas are in sync for min-replicas-to-write",
     "try again when the replicas are back"},
    {"TRYAGAIN", NULL, REDISLOCK_ETRYLATER,
     "the cluster is moving the key's slot", "try again later"},
    {"CLUSTERDOWN", NULL, REDISLOCK_ETRYLATER, "the cluster is down",
     "try again when it is up"},
    {NULL, "max number of clients reached", REDISLOCK_ETRYLATER,
     "the server has reached maxclients", "try again later"},
    /* lib.lua's rl_counter_value: a fencing counter, the fair queue's
     * sequence or a fenced resource's token key holds what redislock did
     * not write. */
    {"RLBADCOUNTER", NULL, REDISLOCK_ESERVER,
     "a counter key redislock keeps holds something else",
     "delete that key: counting goes on from the server's clock, so "
     "tokens still rise"},
    /* fenced_set.lua: a token a double cannot hold exactly (fence.c
     * refuses it first; this guards the key against other callers). */
    {"RLBADTOKEN", NULL, REDISLOCK_EINVAL,
     "the fencing token is not a whole number from 1 below 2^53, which "
     "the script's numbers (doubles) compare exactly",
     "pass the token redislock_fence() gave"},
    /* lib.lua's rl_share_room: the key is a semaphore of another limit, or of
     * the other kind held by many (a semaphore, a lock held shared); the
     * reply says which and what was asked. */
    {"RLLIMIT", NULL, REDISLOCK_EINVAL, NULL,
     "use one kind, and one limit, wherever the key is used; a key's kind "
     "and limit change only once nobody holds it"},
    /* lib.lua's rl_set_keys_match: a set's token adopted with keys that
     * are not its set's; the reply says so. */
    {"RLSETKEYS", NULL, REDISLOCK_EINVAL, NULL,
     "nothing was released or extended; give the same keys as the acquire "
     "that took the set"},
    /* release.lua: hold-after asked of a share (a permit, a reader's). */
    {"RLNOHOLD", NULL, REDISLOCK_EINVAL,
     "hold-after is for a lock held alone: the key is held by many (a "
     "semaphore's permit or a reader's share)",
     "release the share without hold-after"},
    {"DENIED", NULL, REDISLOCK_ECONFIG,
     "the server is in protected mode: without a password set it refuses "
     "clients from other hosts",
     "set a password (requirepass) and give it to the client, or set "
     "protected-mode no on a trusted network"},
    /* rename-command EVAL "" is how scripting is switched off. */
    {NULL, "unknown command", REDISLOCK_ECONFIG,
     "the server lacks a command the library needs: renamed or disabled",
     "restore it (rename-command) or use a server that runs Lua scripts; "
     "the ACL section of redislock(3) lists the commands"},
};

/* The longest part of the server's text quoted for a known class; for
 * others, the detail's own size is the bound. */
#define RL_SAID_MAX 120

/* How much of the server's text s to quote: never the arguments Redis
 * echoes after an unknown command (a script's source, for EVAL); for a
 * known class, only its first sentence, without the name of the script
 * that passed it on (protected mode's reply runs to a page). */
static int said_len(const char *s, int known)
{
    static const char *const ends[] = {", with args beginning with",
                                       " script: ", ". ", "\r", "\n"};
    size_t i, n = strlen(s), nends = known ? 5 : 1;
    const char *e;

    for (i = 0; i < nends; i++)
        if ((e = strstr(s, ends[i])) != NULL && (size_t)(e - s) < n)
            n = (size_t)(e - s);
    if (known && n > RL_SAID_MAX)
        n = RL_SAID_MAX;
    return n < sizeof detail ? (int)n : (int)sizeof detail;
}

static int class_matches(const reply_class *k, const char *s)
{
    size_t n;

    if (k->code == NULL)
        return strstr(s, k->phrase) != NULL;
    n = strlen(k->code);
    return strncmp(s, k->code, n) == 0 && (s[n] == ' ' || s[n] == '\0');
}

/* The detail for a class whose problem is the reply's own words (a
 * class with a code): those after the code, then the fix. */
static redislock_err own_words(const reply_class *k, const char *said)
{
    const char *words = said + strlen(k->code);

    while (*words == ' ')
        words++;
    return rl__err(k->err, "%.*s: %s", said_len(words, 1), words, k->fix);
}

redislock_err rl__err_reply(const char *what, const char *said)
{
    size_t i;

    for (i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        const reply_class *k = &classes[i];

        if (!class_matches(k, said))
            continue;
        if (k->problem == NULL)
            return own_words(k, said);
        return rl__err(k->err, "%s: %s (%.*s): %s", what, k->problem,
                       said_len(said, 1), said, k->fix);
    }
    return rl__err(REDISLOCK_ESERVER, "%s: Redis error: %.*s", what,
                   said_len(said, 0), said);
}

const char *redislock_errdetail(void)
{
    return detail;
}

const char *redislock_strerror(redislock_err err)
{
    switch (err) {
#define RL_STRERROR_(name, value, msg)                                         \
    case REDISLOCK_##name:                                                     \
        return msg;
        REDISLOCK_ERR_MAP(RL_STRERROR_)
#undef RL_STRERROR_
    default:
        return "unknown error code";
    }
}

const char *redislock_errname(redislock_err err)
{
    switch (err) {
#define RL_ERRNAME_(name, value, msg)                                          \
    case REDISLOCK_##name:                                                     \
        return "REDISLOCK_" #name;
        REDISLOCK_ERR_MAP(RL_ERRNAME_)
#undef RL_ERRNAME_
    default:
        return "REDISLOCK_UNKNOWN";
    }
}
