/*
 * error: every code has its message and name from REDISLOCK_ERR_MAP, and
 * unknown values still get a static string, since callers print whatever
 * they were handed.
 */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "test.h"

static const struct {
    redislock_err err;
    const char *name;
    const char *msg;
} codes[] = {
#define XX(name, value, msg) {REDISLOCK_##name, "REDISLOCK_" #name, msg},
    REDISLOCK_ERR_MAP(XX)
#undef XX
};

#define NCODES (sizeof codes / sizeof codes[0])

void test_error_strerror_every_code(void)
{
    size_t i, j;

    ASSERT_EQ_INT(NCODES, REDISLOCK_ERR_COUNT_);
    for (i = 0; i < NCODES; i++) {
        ASSERT_EQ_INT(codes[i].err, (int)i);
        ASSERT_EQ_STR(redislock_strerror(codes[i].err), codes[i].msg);
        /* Static: the same pointer every time. */
        ASSERT(redislock_strerror(codes[i].err) ==
               redislock_strerror(codes[i].err));
        for (j = 0; j < i; j++)
            ASSERT(strcmp(codes[i].msg, codes[j].msg) != 0);
    }
    ASSERT_EQ_STR(redislock_strerror(REDISLOCK_OK), "success");
    ASSERT_EQ_STR(redislock_strerror(REDISLOCK_EHELD),
                  "lock is held by another owner");
}

void test_error_errname_every_code(void)
{
    size_t i;

    for (i = 0; i < NCODES; i++)
        ASSERT_EQ_STR(redislock_errname(codes[i].err), codes[i].name);
    ASSERT_EQ_STR(redislock_errname(REDISLOCK_ELOST), "REDISLOCK_ELOST");
    ASSERT_EQ_STR(redislock_errname(REDISLOCK_ERANDOM), "REDISLOCK_ERANDOM");
}

void test_error_unknown_codes(void)
{
    static const int unknown[] = {999, -1, REDISLOCK_ERR_COUNT_, 1000000, -999};
    size_t i;
    const char *s;

    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        s = redislock_strerror((redislock_err)unknown[i]);
        ASSERT(s != NULL);
        ASSERT_GT(strlen(s), 0);
        ASSERT_EQ_STR(redislock_errname((redislock_err)unknown[i]),
                      "REDISLOCK_UNKNOWN");
    }
}

void test_error_errdetail_never_null(void)
{
    redislock_client *c = NULL;
    const char *d;

    /* Before any call. */
    d = redislock_errdetail();
    ASSERT(d != NULL);
    /* After a failed call, it names something. */
    ASSERT_ERR(redislock_client_new(&c, "http://x", NULL), REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    d = redislock_errdetail();
    ASSERT(d != NULL);
    ASSERT_GT(strlen(d), 0);
}

/* What servers answer (Redis 7.0's words, and Redis 6's for the ACL in a
 * script), the code it must give, and a word of the fix the detail must
 * name. */
static const struct {
    const char *said;
    redislock_err err;
    const char *fix;
} replies[] = {
    {"NOAUTH Authentication required.", REDISLOCK_EAUTH, "password"},
    {"WRONGPASS invalid username-password pair or user is disabled.",
     REDISLOCK_EAUTH, "password"},
    {"ERR invalid password", REDISLOCK_EAUTH, "password"},
    {"NOPERM this user has no permissions to run the 'evalsha' command",
     REDISLOCK_ENOPERM, "redislock(3)"},
    {"NOPERM this user has no permissions to access one of the keys used as "
     "arguments",
     REDISLOCK_ENOPERM, "redislock(3)"},
    {"ERR The user executing the script can't run this command or "
     "subcommand script: ee5bed0f6963e93a14eebfb64f07c299c1b4313f, on "
     "@user_script:1.",
     REDISLOCK_ENOPERM, "redislock(3)"},
    /* Redis 8.6 and Valkey 9.1, as acl_elect_stream_commands met it. */
    {"ERR ACL failure in script: User locker has no permissions to run the "
     "'xadd' command script: cb04e94922cd3ef136389e909d9565992637ecb1, on "
     "@user_script:130.",
     REDISLOCK_ENOPERM, "redislock(3)"},
    {"READONLY You can't write against a read only replica. script: "
     "ee5bed0f6963e93a14eebfb64f07c299c1b4313f, on @user_script:1.",
     REDISLOCK_EREADONLY, "master"},
    {"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is "
     "set to 'no'.",
     REDISLOCK_EREADONLY, "master"},
    {"LOADING Redis is loading the dataset in memory", REDISLOCK_ETRYLATER,
     "try again"},
    {"BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
     "SHUTDOWN NOSAVE.",
     REDISLOCK_ETRYLATER, "try again"},
    {"OOM command not allowed when used memory > 'maxmemory'.",
     REDISLOCK_ETRYLATER, "maxmemory"},
    {"NOREPLICAS Not enough good replicas to write.", REDISLOCK_ETRYLATER,
     "try again"},
    {"CLUSTERDOWN The cluster is down", REDISLOCK_ETRYLATER, "try again"},
    {"TRYAGAIN Multiple keys request during rehashing of slot",
     REDISLOCK_ETRYLATER, "try again"},
    {"ERR max number of clients reached", REDISLOCK_ETRYLATER, "try again"},
    {"DENIED Redis is running in protected mode because protected mode is "
     "enabled and no password is set for the default user. In this mode "
     "connections are only accepted from the loopback interface.",
     REDISLOCK_ECONFIG, "protected-mode"},
    {"ERR unknown command 'EVAL', with args beginning with: '-- Acquire a "
     "lock' '1' 'k' ",
     REDISLOCK_ECONFIG, "rename-command"},
    {"ERR unknown command `EVALSHA`, with args beginning with: "
     "`0123456789abcdef0123456789abcdef01234567` `1` `k` ",
     REDISLOCK_ECONFIG, "rename-command"},
    /* Codes are matched whole: BUSYKEY is no BUSY, OOMX no OOM. */
    {"BUSYKEY Target key name already exists.", REDISLOCK_ESERVER, "BUSYKEY"},
    {"OOMX whatever", REDISLOCK_ESERVER, "OOMX"},
    {"ERR wrong number of arguments for 'evalsha' command", REDISLOCK_ESERVER,
     "wrong number"},
    {"", REDISLOCK_ESERVER, "Redis error"},
};

void test_error_reply_classes(void)
{
    size_t i;
    int bad = 0;

    for (i = 0; i < sizeof replies / sizeof replies[0]; i++) {
        redislock_err e = rl__err_reply("call", replies[i].said);
        const char *d = redislock_errdetail();

        test_log("%s: %s", redislock_errname(e), d);
        if (e != replies[i].err || strncmp(d, "call: ", 6) != 0 ||
            strstr(d, replies[i].fix) == NULL) {
            test_log("  MISMATCH: want %s, naming \"%s\"",
                     redislock_errname(replies[i].err), replies[i].fix);
            bad++;
        }
    }
    ASSERT_EQ_INT(bad, 0);
}

/* Redis echoes the arguments of an unknown command: for EVAL, the
 * script's source. The detail names the command and never the echo, nor
 * the server's own text beyond its first sentence. */
void test_error_reply_hides_echo(void)
{
    char said[600];
    const char *d;

    ASSERT_ERR(rl__err_reply("acquire",
                             "ERR unknown command 'EVAL', with args "
                             "beginning with: '-- Acquire a lock: if the "
                             "key is free...' '1' 'k' "),
               REDISLOCK_ECONFIG);
    d = redislock_errdetail();
    ASSERT(strstr(d, "'EVAL'") != NULL);
    ASSERT(strstr(d, "Acquire") == NULL && strstr(d, "with args") == NULL);
    /* Also where the server's error is unknown to us. */
    ASSERT_ERR(rl__err_reply("x", "ERR whatever, with args beginning with: "
                                  "'-- secret source'"),
               REDISLOCK_ESERVER);
    ASSERT(strstr(redislock_errdetail(), "secret") == NULL);
    /* A page-long reply is cut, and the fix still shows. */
    memset(said, 'a', sizeof said - 1);
    memcpy(said, "DENIED ", 7);
    said[sizeof said - 1] = '\0';
    ASSERT_ERR(rl__err_reply("PING", said), REDISLOCK_ECONFIG);
    d = redislock_errdetail();
    ASSERT_LT(strlen(d), 400);
    ASSERT(strstr(d, "protected-mode no") != NULL);
}

void test_version_matches_macros(void)
{
    char want[64];

    snprintf(want, sizeof want, "%d.%d.%d", REDISLOCK_VERSION_MAJOR,
             REDISLOCK_VERSION_MINOR, REDISLOCK_VERSION_PATCH);
    ASSERT_EQ_STR(redislock_version(), want);
    ASSERT_EQ_INT(REDISLOCK_VERSION_NUM, (REDISLOCK_VERSION_MAJOR << 16) |
                                             (REDISLOCK_VERSION_MINOR << 8) |
                                             REDISLOCK_VERSION_PATCH);
}
