/*
 * badserver: the library against a server that lies, stalls or breaks the
 * protocol (tests/harness/fakeserver.h). Whatever the server does, every
 * call must return within its timeout plus some slack, never crash (the
 * tests run under ASan and UBSan), never report a success the server did
 * not give, and never allocate what a length header claims.
 *
 * The lies no client can see through: "+OK" to SET NX PX is exactly
 * what Redis answers when the lock is taken, so a server that says "+OK"
 * to everything makes a SET-based acquire report REDISLOCK_OK. The tests
 * allow that only when the call really sent SET (a script-based acquire
 * must see through it). Likewise a positive integer is how acquire.lua
 * answers a plain lock taken (its fencing token; negated when someone
 * waits), so ":1" to a plain acquire is a lock taken with token 1; to a
 * reentrant acquire it is not an answer. Everything else (release,
 * extend, ttl, inspect, reentrant acquire, list) expects an integer or an
 * array and must say REDISLOCK_EPROTOCOL.
 *
 * A rule answers the first command a call sends after the handshake,
 * whatever it is (SET or a script): the contract is about the call, not
 * about which command implements it.
 *
 * Table tests run every case, log one line each, and fail at the end with
 * the number of mismatches, so one run shows every problem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fakeserver.h"
#include "harness/fixture.h"
#include "harness/util.h"
#include "test.h"

#define TIMEOUT_MS 300
/* Scheduling, sanitizers, a fork per connection. RL_TEST_TIME_FACTOR
 * multiplies it for slow checkers (valgrind). */
#define SLACK_MS 400
#define WAIT_MS 100
/* Peak RSS a single call may add. */
#define MAX_GROWTH_KB (32 * 1024)

typedef enum op {
    OP_CLIENT_NEW,
    OP_ACQUIRE,
    OP_ACQUIRE_WAIT,
    OP_ACQUIRE_RICH,
    OP_RELEASE,
    OP_EXTEND,
    OP_TTL,
    OP_INSPECT,
    OP_LIST,
    OP_COUNT_
} op;

static const char *const op_names[] = {
    "client_new", "acquire", "acquire(wait)", "acquire(reentrant)",
    "release",    "extend",  "ttl",           "inspect",
    "list",
};

/* Masks of accepted codes. */
#define W1(a) (1u << REDISLOCK_##a)
#define W2(a, b) (W1(a) | W1(b))
/* A call may also report OK when it sent SET: see the top. */
#define OK_IF_SET (1u << 31)

/* One scripted reply and what the call must make of it. */
typedef struct bcase {
    op op;
    const char *reply;  /* to the call's first command (PING: client_new) */
    unsigned want;      /* a mask of accepted redislock_err codes */
    const char *detail; /* "a|b": the detail names one of them */
} bcase;

typedef struct outcome {
    redislock_err err;
    int64_t ms;
    long grew_kb;  /* peak RSS added by the call */
    long sets;     /* SET commands the server saw */
    int64_t fence; /* an acquire taken: its token */
    char detail[512];
} outcome;

/* The token an acquire must report when taken (0: any), for judge. */
static int64_t want_fence;

static int64_t slack_ms(void)
{
    const char *f = getenv("RL_TEST_TIME_FACTOR");
    int k = f != NULL ? atoi(f) : 1;

    return SLACK_MS * (k > 1 ? k : 1);
}

static int64_t bound_ms(op o)
{
    return TIMEOUT_MS + slack_ms() + (o == OP_ACQUIRE_WAIT ? WAIT_MS : 0);
}

/* A field of /proc/self/status in kB, or -1. */
static long status_kb(const char *field)
{
    char line[256];
    size_t n = strlen(field);
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Resets VmHWM (the peak RSS) to the current RSS. */
static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");

    if (f != NULL) {
        fputs("5", f);
        fclose(f);
    }
}

static redislock_options client_opts(void)
{
    redislock_options o = {0};

    o.connect_timeout_ms = TIMEOUT_MS;
    o.command_timeout_ms = TIMEOUT_MS;
    return o;
}

/*
 * A client with client_opts() for a call under test; making it is not
 * under test. Its PING goes to a double that answers it at once, but on
 * a new connection, which the double serves from a newly forked process:
 * beside a second test run that missed TIMEOUT_MS now and then (a case
 * in 90 of badserver_partial_then_silence, which makes a client per
 * case), and at load 12 missed it three times running (2026-11-29). A
 * timeout there is tried again for up to SETUP_BUDGET_MS; any other
 * failure, or a timeout after that, fails the test.
 */
#define SETUP_BUDGET_MS 10000
#define setup_client(url) setup_client_at_(__FILE__, __LINE__, url)
static redislock_client *setup_client_at_(const char *file, int line,
                                          const char *url)
{
    redislock_options co = client_opts();
    redislock_client *c = NULL;
    redislock_err e = REDISLOCK_ETIMEDOUT;
    int64_t until = th_now_ms() + SETUP_BUDGET_MS;
    int i;

    for (i = 0; e == REDISLOCK_ETIMEDOUT && (i == 0 || th_now_ms() < until);
         i++) {
        if (i > 0)
            test_log("  setting up the client timed out (%s); again",
                     redislock_errdetail());
        e = redislock_client_new(&c, url, &co);
    }
    if (e != REDISLOCK_OK)
        test_fail_(file, line, "redislock_client_new(\"%s\"): %s; %s", url,
                   redislock_errname(e), redislock_errdetail());
    return c;
}

static int count_cb(const redislock_info *info, void *arg)
{
    (void)info;
    ++*(int *)arg;
    return 0;
}

/* The call itself; l is a handle on c (adopted for release and extend). */
static redislock_err call(op o, const char *url, redislock_client *c,
                          redislock_lock *l)
{
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    redislock_options co = client_opts();
    static char poison; /* not NULL: a failure must clear it */
    redislock_client *nc = (redislock_client *)(void *)&poison;
    redislock_info info;
    redislock_err e;
    int64_t ttl;
    int n = 0;

    switch (o) {
    case OP_CLIENT_NEW:
        e = redislock_client_new(&nc, url, &co);
        if (e != REDISLOCK_OK)
            ASSERT(nc == NULL);
        redislock_client_free(nc);
        return e;
    case OP_ACQUIRE:
        return redislock_acquire(l, &ao);
    case OP_ACQUIRE_WAIT:
        ao.wait_ms = WAIT_MS;
        ao.retry_delay_ms = 20;
        return redislock_acquire(l, &ao);
    case OP_ACQUIRE_RICH:
        ao.reentrant = 1;
        return redislock_acquire(l, &ao);
    case OP_RELEASE:
        return redislock_release(l);
    case OP_EXTEND:
        return redislock_extend(l, 10000);
    case OP_TTL:
        return redislock_ttl(l, &ttl);
    case OP_INSPECT:
        return redislock_inspect(l, &info);
    case OP_LIST:
        return redislock_list(c, NULL, count_cb, &n);
    default:
        return REDISLOCK_EINVAL;
    }
}

/* Runs o once against s with a fresh client and handle. */
static outcome measure(const fs_server *s, op o, int tcp)
{
    const char *url = tcp ? s->tcp_url : s->unix_url;
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    outcome out;
    long before;
    int64_t t0;

    if (o != OP_CLIENT_NEW) {
        c = setup_client(url);
        l = th_lock(c, "bad:key");
        if (o == OP_RELEASE || o == OP_EXTEND)
            ASSERT_OK(redislock_adopt(l, TH_WRONG_TOKEN));
    }
    reset_peak();
    before = status_kb("VmRSS");
    t0 = th_now_ms();
    out.err = call(o, url, c, l);
    out.ms = th_now_ms() - t0;
    snprintf(out.detail, sizeof out.detail, "%s", redislock_errdetail());
    out.grew_kb = status_kb("VmHWM") - before;
    out.sets = fs_calls(s, "SET");
    out.fence = l != NULL && out.err == REDISLOCK_OK ? redislock_fence(l) : 0;
    redislock_lock_free(l);
    redislock_client_free(c);
    return out;
}

/* Whether detail names one of the '|'-separated words of want. */
static int names_one(const char *detail, const char *want)
{
    char word[64];
    size_t n;

    for (; *want != '\0'; want += n + (want[n] == '|')) {
        n = strcspn(want, "|");
        snprintf(word, sizeof word, "%.*s", (int)n, want);
        if (strstr(detail, word) != NULL)
            return 1;
    }
    return 0;
}

static const char *errnames(unsigned mask, char *buf, size_t size)
{
    size_t at = 0;
    int e;

    buf[0] = '\0';
    for (e = 0; e < REDISLOCK_ERR_COUNT_ && at < size; e++)
        if (mask & (1u << e))
            at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? "|" : "",
                                   redislock_errname(e) + 10);
    return buf;
}

/* Checks one outcome; logs it, and returns 1 when it is wrong. */
static int judge(const char *what, op o, const outcome *r, unsigned want,
                 const char *detail)
{
    char names[128];
    int bad = 0;

    test_log("%-18s %-28s -> %s in %lld ms, +%ld kB%s%s", op_names[o], what,
             redislock_errname(r->err) + 10, (long long)r->ms, r->grew_kb,
             r->err != REDISLOCK_OK ? ": " : "",
             r->err != REDISLOCK_OK ? r->detail : "");
    if (r->err == REDISLOCK_OK && (want & OK_IF_SET) && r->sets > 0)
        test_log("  OK: the call sent SET, and \"+OK\" is SET's success");
    else if (!(want & (1u << r->err))) {
        test_log("  MISMATCH: want %s", errnames(want, names, sizeof names));
        bad = 1;
    }
    if (r->err == REDISLOCK_OK && want_fence != 0 && r->fence != want_fence) {
        test_log("  MISMATCH: fence %lld, want %lld", (long long)r->fence,
                 (long long)want_fence);
        bad = 1;
    }
    if (r->ms > bound_ms(o)) {
        test_log("  TOO SLOW: %lld ms, bound %lld ms", (long long)r->ms,
                 (long long)bound_ms(o));
        bad = 1;
    }
    if (r->grew_kb > MAX_GROWTH_KB) {
        test_log("  MEMORY: peak RSS grew %ld kB", r->grew_kb);
        bad = 1;
    }
    if (r->err != REDISLOCK_OK &&
        (r->detail[0] == '\0' ||
         (detail != NULL && !names_one(r->detail, detail)))) {
        test_log("  DETAIL: want it to mention \"%s\"",
                 detail ? detail : "anything");
        bad = 1;
    }
    return bad;
}

/* Serves rules on a fresh fake server and runs o against it. */
static int run_rules(const fs_rule *rules, size_t n, const char *greeting,
                     const char *what, op o, unsigned want, const char *detail,
                     int tcp)
{
    fs_server *s = fs_start(rules, n, greeting);
    outcome r = measure(s, o, tcp);
    int bad = judge(what, o, &r, want, detail);

    fs_stop(s);
    return bad;
}

/* The constructors ask HELLO with their PING, to tell a Redis Sentinel
 * from Redis; a catch-all rule would answer it as it answers the call
 * under test, so these doubles answer it as a server before Redis 6.2
 * does, which tells nothing and leaves the connection as it was. */
#define OLD_HELLO FS_ALWAYS("HELLO", "-ERR unknown command 'HELLO'\r\n")

/* Sends c's reply as action says, and judges the call. */
static int run_case(const bcase *c, fs_action action, int param, int tcp)
{
    /* HELLO, which a client's constructor asks with its PING, as a
     * server before Redis 6.2 answers it (see OLD_HELLO). */
    fs_rule rules[3] = {FS_ALWAYS("PING", "+PONG\r\n"),
                        OLD_HELLO,
                        {NULL, c->reply, action, param, 0, NULL}};
    static const char *const how[] = {"", " slow", " hang", " close", ""};
    char what[64];
    size_t skip = c->op == OP_CLIENT_NEW ? 1 : 0; /* PING gets it */

    test_escape_(c->reply, strlen(c->reply), what, 28);
    snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s",
             how[action], tcp ? " tcp" : "");
    return run_rules(rules + skip, 3 - skip, NULL, what, c->op, c->want,
                     c->detail, tcp);
}

static void expect_none(int bad)
{
    if (bad != 0)
        test_fail_(__FILE__, __LINE__,
                   "%d cases went wrong (see MISMATCH, "
                   "TOO SLOW, MEMORY and DETAIL above)",
                   bad);
}

/* Each case, its reply sent at once. */
static void run_table(const bcase *cases, size_t n)
{
    size_t i;
    int bad = 0;

    for (i = 0; i < n; i++)
        bad += run_case(&cases[i], FS_REPLY, 0, 0);
    expect_none(bad);
}

#define RUN_TABLE(cases) run_table(cases, sizeof cases / sizeof cases[0])

/* The same reply to the first command of every call. */
static int run_every_op(const char *reply, fs_action action, int param,
                        unsigned want, int tcp)
{
    int o, bad = 0;

    for (o = 0; o < OP_COUNT_; o++) {
        bcase c = {(op)o, reply, want, NULL};
        bad += run_case(&c, action, param, tcp);
    }
    return bad;
}

#define EPROTO W1(EPROTOCOL)
#define ACQ "SET|acquire" /* what an acquire's detail may name */

void test_badserver_ok_to_everything(void)
{
    static const bcase cases[] = {
        {OP_ACQUIRE, "+OK\r\n", EPROTO | OK_IF_SET, ACQ},
        {OP_ACQUIRE_WAIT, "+OK\r\n", EPROTO | OK_IF_SET, ACQ},
        {OP_ACQUIRE_RICH, "+OK\r\n", EPROTO, "acquire"},
        {OP_RELEASE, "+OK\r\n", EPROTO, "release"},
        {OP_EXTEND, "+OK\r\n", EPROTO, "extend"},
        {OP_TTL, "+OK\r\n", EPROTO, "PTTL"},
        {OP_INSPECT, "+OK\r\n", EPROTO, "inspect"},
        {OP_LIST, "+OK\r\n", EPROTO, "SCAN"},
        /* "+OK" to PING: a server that is not Redis may be refused. */
        {OP_CLIENT_NEW, "+OK\r\n", W2(OK, EPROTOCOL), NULL},
    };

    RUN_TABLE(cases);
}

/* Replies of a type the call cannot use. None of them is a success in
 * any format the library has used (SET's "+OK", the acquire script's
 * {1, holds[, fence]}, the release and extend scripts' integers); a
 * plain acquire's integers are in test_badserver_plain_acquire_integers. */
void test_badserver_wrong_reply_types(void)
{
    static const bcase cases[] = {
        {OP_ACQUIRE, "*1\r\n+OK\r\n", EPROTO, ACQ},
        {OP_ACQUIRE, "$2\r\nOK\r\n", EPROTO, ACQ},
        {OP_ACQUIRE, "*3\r\n:1\r\n:1\r\n+7\r\n", EPROTO, ACQ},
        {OP_ACQUIRE_RICH, ":1\r\n", EPROTO, "acquire"},
        {OP_ACQUIRE_RICH, "*2\r\n+OK\r\n:1\r\n", EPROTO, "acquire"},
        {OP_ACQUIRE_RICH, "*2\r\n:0\r\n$4\r\n5000\r\n", EPROTO, "acquire"},
        {OP_ACQUIRE_RICH, "*0\r\n", EPROTO, "acquire"},
        {OP_RELEASE, "*2\r\n:1\r\n:1\r\n", EPROTO, "release"},
        {OP_RELEASE, "$-1\r\n", EPROTO, "release"},
        {OP_RELEASE, "$1\r\n1\r\n", EPROTO, "release"},
        {OP_EXTEND, "*2\r\n:1\r\n:1\r\n", EPROTO, "extend"},
        {OP_EXTEND, "*-1\r\n", EPROTO, "extend"},
        {OP_EXTEND, "+1\r\n", EPROTO, "extend"},
        {OP_TTL, "+OK\r\n", EPROTO, "PTTL"},
        {OP_TTL, "$4\r\n1000\r\n", EPROTO, "PTTL"},
        {OP_TTL, "*1\r\n:5\r\n", EPROTO, "PTTL"},
        {OP_INSPECT, ":1\r\n", EPROTO, "inspect"},
        {OP_INSPECT, "*2\r\n:1\r\n:1\r\n", EPROTO, "inspect"},
        {OP_INSPECT, "*1\r\n$4\r\nhash\r\n", EPROTO, "inspect"},
        /* Odd field types in a hash lock's answer: no crash; a partial
         * answer or a refusal are both fair. */
        {OP_INSPECT, "*5\r\n$4\r\nhash\r\n:100\r\n:1\r\n*0\r\n$-1\r\n",
         W2(OK, EPROTOCOL), NULL},
        {OP_INSPECT, "*5\r\n$4\r\nhash\r\n:100\r\n*1\r\n:1\r\n+x\r\n-ERR x\r\n",
         W2(OK, EPROTOCOL), NULL},
        {OP_INSPECT,
         "*7\r\n$4\r\nhash\r\n:100\r\n:1\r\n*1\r\n:2\r\n-ERR x\r\n:3\r\n:0\r\n",
         W2(OK, EPROTOCOL), NULL},
        {OP_INSPECT,
         "*7\r\n$4\r\nhash\r\n:100\r\n$1\r\nx\r\n$5\r\nabcde\r\n$0\r\n\r\n"
         ":-9223372036854775808\r\n:7\r\n",
         W2(OK, EPROTOCOL), NULL},
        {OP_LIST, "*2\r\n:0\r\n*0\r\n", EPROTO, "SCAN"},
        {OP_LIST, "*2\r\n$25\r\n1234567890123456789012345\r\n*0\r\n", EPROTO,
         "SCAN"},
        /* A key that is not a string is no lock: skipped. */
        {OP_LIST, "*2\r\n$1\r\n0\r\n*1\r\n:5\r\n", W1(OK), NULL},
        /* Not PONG: a client may refuse a server that is not Redis. */
        {OP_CLIENT_NEW, ":1\r\n", W2(OK, EPROTOCOL), NULL},
        {OP_CLIENT_NEW, "*0\r\n", W2(OK, EPROTOCOL), NULL},
    };

    RUN_TABLE(cases);
}

/* An integer is how acquire.lua answers a plain lock taken: its fencing
 * token, negated when someone waited. The token reported must be the
 * integer's magnitude; 0 and the one integer that cannot be negated are
 * no token. A reentrant acquire never answers so. */
void test_badserver_plain_acquire_integers(void)
{
    static const struct {
        op op;
        const char *reply;
        unsigned want;
        int64_t fence;
    } cases[] = {
        {OP_ACQUIRE, ":1\r\n", W1(OK), 1},
        {OP_ACQUIRE, ":-7\r\n", W1(OK), 7},
        {OP_ACQUIRE, ":1765000000000000\r\n", W1(OK), 1765000000000000},
        {OP_ACQUIRE_WAIT, ":-42\r\n", W1(OK), 42},
        {OP_ACQUIRE, ":0\r\n", EPROTO, 0},
        {OP_ACQUIRE, ":-9223372036854775808\r\n", EPROTO, 0},
        {OP_ACQUIRE_RICH, ":1\r\n", EPROTO, 0},
        {OP_ACQUIRE_RICH, ":-7\r\n", EPROTO, 0},
    };
    size_t i;
    int bad = 0;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bcase c = {cases[i].op, cases[i].reply, cases[i].want, "acquire"};

        want_fence = cases[i].fence;
        bad += run_case(&c, FS_REPLY, 0, 0);
    }
    want_fence = 0;
    expect_none(bad);
}

/*
 * Lengths that claim more than any lock reply holds, or less than
 * nothing. The claim alone must not be allocated: the call fails at once
 * (a protocol error) or after its timeout, and the peak RSS stays put.
 */
void test_badserver_bad_lengths(void)
{
    /* hiredis 0.14 rejects counts over INT_MAX; 1.x allows 2^32 - 1 and
     * may then fail the calloc: ENOMEM is fair, a big RSS is not. */
    unsigned huge = W2(ETIMEDOUT, EPROTOCOL) | W1(ENOMEM);
    int bad = 0;

    bad += run_every_op("$999999999999\r\n", FS_HANG, 0, W1(ETIMEDOUT), 0);
    bad += run_every_op("$9223372036854775807\r\n", FS_HANG, 0,
                        W2(ETIMEDOUT, EPROTOCOL), 0);
    bad += run_every_op("$-5\r\n", FS_HANG, 0, EPROTO, 0);
    bad += run_every_op("*-5\r\n", FS_HANG, 0, EPROTO, 0);
    bad += run_every_op("*4294967295\r\n", FS_HANG, 0, huge, 0);
    bad += run_every_op(":99999999999999999999999\r\n", FS_HANG, 0, EPROTO, 0);
    expect_none(bad);
}

/* An array count just under what hiredis 0.14 refuses, then silence:
 * lock replies have at most 7 elements, SCAN's a few hundred, so such a
 * count can be refused at once rather than allocated (and later freed). */
void test_badserver_huge_array_count(void)
{
    bcase c = {OP_TTL, "*2147483647\r\n", W2(ETIMEDOUT, EPROTOCOL) | W1(ENOMEM),
               NULL};

    expect_none(run_case(&c, FS_HANG, 0, 0));
}

/* Half a reply, then nothing: each call gives up after its timeout. */
void test_badserver_partial_then_silence(void)
{
    static const char *const partial[] = {"", "+O", "$10\r\nabc",
                                          "*2\r\n:1\r\n", ":12"};
    size_t i;
    int bad = 0, tcp;

    for (tcp = 0; tcp < 2; tcp++)
        for (i = 0; i < sizeof partial / sizeof partial[0]; i++)
            bad += run_every_op(partial[i], FS_HANG, 0, W1(ETIMEDOUT), tcp);
    expect_none(bad);
}

/* The connection closes in the middle of a reply (or before it). */
void test_badserver_close_mid_reply(void)
{
    static const char *const partial[] = {"", "+OK", "$10\r\nabc",
                                          "*2\r\n:1\r\n"};
    size_t i;
    int bad = 0;

    for (i = 0; i < sizeof partial / sizeof partial[0]; i++)
        bad += run_every_op(partial[i], FS_CLOSE, 0, W1(EIO), 0);
    expect_none(bad);
}

/* Valid replies, one byte every 20 ms: slow but each byte in time, so
 * honoured. Acquire is answered in both formats (SET's and the acquire
 * script's), whichever the call sends. */
void test_badserver_slow_valid_reply(void)
{
    static const struct {
        op op;
        const char *set, *script;
        unsigned want;
    } cases[] = {
        {OP_CLIENT_NEW, "", "", W1(OK)},
        {OP_ACQUIRE, "+OK\r\n", "*3\r\n:1\r\n:1\r\n:7\r\n", W1(OK)},
        {OP_ACQUIRE, "$-1\r\n", "*2\r\n:0\r\n:5000\r\n", W1(EHELD)},
        {OP_RELEASE, "", ":1\r\n", W1(OK)},
        {OP_RELEASE, "", ":-1\r\n", W1(ELOST)},
        {OP_EXTEND, "", ":1\r\n", W1(OK)},
        {OP_EXTEND, "", ":0\r\n", W1(EEXPIRED)},
        {OP_TTL, "", "", W1(OK)},
    };
    size_t i;
    int bad = 0;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int slow_ping = cases[i].op == OP_CLIENT_NEW;
        fs_rule rules[] = {
            {"PING", "+PONG\r\n", slow_ping ? FS_SLOW : FS_REPLY, 20, 0, NULL},
            /* 10 ms a byte: the longest reply (16 bytes) still arrives
             * within the 300 ms a call may take. */
            {"SET", cases[i].set, FS_SLOW, 10, 0, NULL},
            {"EVALSHA", cases[i].script, FS_SLOW, 10, 0, NULL},
            {"PTTL", ":5000\r\n", FS_SLOW, 20, 0, NULL},
        };
        char what[64];

        test_escape_(cases[i].script, strlen(cases[i].script), what, 28);
        bad += run_rules(rules, 4, NULL, what, cases[i].op, cases[i].want, NULL,
                         0);
    }
    expect_none(bad);
}

/*
 * A long reply dribbled one byte every 40 ms: each read waits less than
 * the timeout, but the reply as a whole takes seconds. The timeout is the
 * caller's bound on the call, so the call must end near it.
 */
void test_badserver_slow_reply_bounded(void)
{
    static const char dribble[] =
        "$40\r\n0123456789012345678901234567890123456789\r\n";

    expect_none(run_every_op(dribble, FS_SLOW, 40, W1(ETIMEDOUT), 0));
}

void test_badserver_error_replies(void)
{
    static const char readonly[] =
        "-READONLY You can't write against a read only replica.\r\n";
    static const char loading[] =
        "-LOADING Redis is loading the dataset in memory\r\n";
    static const char busy[] = "-BUSY Redis is busy running a script. You "
                               "can only call SCRIPT KILL or SHUTDOWN "
                               "NOSAVE.\r\n";
    static const bcase cases[] = {
        /* A replica: the fix is the master's address. */
        {OP_ACQUIRE, readonly, W1(EREADONLY), "READONLY"},
        {OP_ACQUIRE_WAIT, readonly, W1(EREADONLY), "READONLY"},
        {OP_ACQUIRE_RICH, readonly, W1(EREADONLY), "READONLY"},
        {OP_RELEASE, readonly, W1(EREADONLY), "READONLY"},
        /* Passing states of the server: try again later. */
        {OP_EXTEND, busy, W1(ETRYLATER), "BUSY"},
        {OP_RELEASE, busy, W1(ETRYLATER), "BUSY"},
        {OP_TTL, loading, W1(ETRYLATER), "LOADING"},
        {OP_INSPECT, loading, W1(ETRYLATER), "LOADING"},
        {OP_LIST, loading, W1(ETRYLATER), "LOADING"},
        {OP_CLIENT_NEW, loading, W1(ETRYLATER), "LOADING"},
        {OP_ACQUIRE, "-MOVED 3999 127.0.0.1:6381\r\n", W1(ESERVER), "MOVED"},
        /* The server's memory, not ours: not ENOMEM. */
        {OP_ACQUIRE,
         "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
         W1(ETRYLATER), "OOM"},
        {OP_ACQUIRE, "-NOAUTH Authentication required.\r\n", W1(EAUTH),
         "NOAUTH"},
        /* BUSYKEY is no BUSY: the code is matched whole. */
        {OP_RELEASE, "-BUSYKEY Target key name already exists.\r\n",
         W1(ESERVER), "BUSYKEY"},
        {OP_RELEASE, "-\r\n", W1(ESERVER), NULL},
    };

    RUN_TABLE(cases);
}

/* ACL denials are about what the user may do, not who it is: ENOPERM,
 * not EAUTH, so that nobody re-checks a password that is right. */
void test_badserver_noperm_enoperm(void)
{
    static const char cmd[] = "-NOPERM this user has no permissions to run "
                              "the 'evalsha' command\r\n";
    static const char key[] = "-NOPERM this user has no permissions to "
                              "access one of the keys used as arguments\r\n";
    static const bcase cases[] = {
        {OP_CLIENT_NEW, cmd, W1(ENOPERM), "NOPERM"},
        {OP_ACQUIRE, key, W1(ENOPERM), "NOPERM"},
        {OP_ACQUIRE_WAIT, key, W1(ENOPERM), "NOPERM"},
        {OP_ACQUIRE_RICH, cmd, W1(ENOPERM), "NOPERM"},
        {OP_RELEASE, cmd, W1(ENOPERM), "NOPERM"},
        {OP_EXTEND, key, W1(ENOPERM), "NOPERM"},
        {OP_TTL, key, W1(ENOPERM), "NOPERM"},
        {OP_INSPECT, cmd, W1(ENOPERM), "NOPERM"},
        {OP_LIST, cmd, W1(ENOPERM), "NOPERM"},
    };

    RUN_TABLE(cases);
}

/* A first reply that is not RESP at all: what listens is not Redis, and
 * the detail says so with what it answered (ECONNECT, as when nothing
 * listens). The same bytes after a first good reply come from a confused
 * server: EPROTOCOL, as before. */
void test_badserver_not_resp(void)
{
    static const char http[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    static const char tls[] = "\x16\x03\x03\x01\x02\x02";
    static const char ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
    static const bcase cases[] = {
        {OP_CLIENT_NEW, http, W1(ECONNECT), "\"HTTP/1.1 400 Bad Request\""},
        {OP_CLIENT_NEW, tls, W1(ECONNECT), "rediss://"},
        {OP_CLIENT_NEW, ssh, W1(ECONNECT), "\"SSH-2.0-OpenSSH_9.2\""},
        {OP_ACQUIRE, http, EPROTO, "Protocol error"},
        {OP_RELEASE, ssh, EPROTO, "Protocol error"},
    };

    RUN_TABLE(cases);
}

/* NOSCRIPT to EVALSHA, after a SCRIPT LOAD, and to EVAL: one load and
 * one EVAL, then an error; no loop. */
void test_badserver_noscript_forever(void)
{
    static const fs_rule rules[] = {
        FS_ALWAYS("EVALSHA", "-NOSCRIPT No matching script.\r\n"),
        FS_ALWAYS("EVAL", "-NOSCRIPT No matching script.\r\n"),
    };
    static const op each[] = {OP_ACQUIRE_RICH, OP_RELEASE, OP_EXTEND,
                              OP_INSPECT};
    size_t i;
    int bad = 0;

    for (i = 0; i < sizeof each / sizeof each[0]; i++) {
        fs_server *s = fs_start(rules, 2, NULL);
        outcome r = measure(s, each[i], 0);

        bad += judge("NOSCRIPT to EVALSHA and EVAL", each[i], &r, W1(ESERVER),
                     "NOSCRIPT");
        test_log("  sent EVALSHA %ld, SCRIPT %ld, EVAL %ld",
                 fs_calls(s, "EVALSHA"), fs_calls(s, "SCRIPT"),
                 fs_calls(s, "EVAL"));
        ASSERT_EQ_INT(fs_calls(s, "EVALSHA"), 2);
        ASSERT_EQ_INT(fs_calls(s, "SCRIPT"), 1);
        ASSERT_EQ_INT(fs_calls(s, "EVAL"), 1);
        fs_stop(s);
    }
    expect_none(bad);
}

/* Two calls on one client: the first fails as the rule says, the second
 * must get its own, fresh answer on a new connection. A timeout is no
 * answer, neither fresh nor stale: the double serves the new connection
 * from a newly forked process, which a loaded machine can hold up past
 * TIMEOUT_MS. Then the call is made once more, on one more new
 * connection. */
static void fail_then_recover(const fs_rule *first, redislock_err want1,
                              const char *second, redislock_err want2)
{
    fs_rule rules[2] = {*first, FS_ALWAYS("EVALSHA", second)};
    fs_server *s;
    redislock_client *c;
    redislock_lock *l;
    redislock_err e;
    int64_t t0;
    int before, fresh = 1;

    rules[0].times = 1;
    s = fs_start(rules, 2, NULL);
    c = setup_client(s->unix_url);
    l = th_lock(c, "bad:key");
    ASSERT_OK(redislock_adopt(l, TH_WRONG_TOKEN));
    t0 = th_now_ms();
    ASSERT_ERR(redislock_extend(l, 10000), want1);
    ASSERT_LE(th_now_ms() - t0, bound_ms(OP_EXTEND));
    /* Counted from here: which connection the first call used (one the
     * client opened, or one of its own) is not the point. */
    before = fs_connections(s);
    /* A reused connection would still hold the first reply's bytes. */
    e = redislock_extend(l, 10000);
    if (e == REDISLOCK_ETIMEDOUT && want2 != REDISLOCK_ETIMEDOUT) {
        test_log("  the second call timed out (%s); once more",
                 redislock_errdetail());
        e = redislock_extend(l, 10000);
        fresh++;
    }
    ASSERT_ERR(e, want2);
    test_log("%s then %s over %d connections", redislock_errname(want1),
             redislock_errname(want2), fs_connections(s));
    ASSERT_EQ_INT(fs_connections(s) - before, fresh);
    redislock_lock_free(l);
    redislock_client_free(c);
    fs_stop(s);
}

void test_badserver_reconnects_after_failure(void)
{
    fs_rule closed = {"EVALSHA", "$10\r\nabc", FS_CLOSE, 0, 1, NULL};
    fs_rule hung = {"EVALSHA", "$10\r\nabc", FS_HANG, 0, 1, NULL};
    /* The answer arrives after the timeout: it must never be read as the
     * answer to the next call (":1" would be a false OK there). */
    fs_rule late = {"EVALSHA", ":1\r\n", FS_SLOW, TIMEOUT_MS + 100, 1, NULL};
    fs_rule bad = FS_ONCE("EVALSHA", "$-5\r\n");

    fail_then_recover(&closed, REDISLOCK_EIO, ":1\r\n", REDISLOCK_OK);
    fail_then_recover(&hung, REDISLOCK_ETIMEDOUT, ":1\r\n", REDISLOCK_OK);
    fail_then_recover(&late, REDISLOCK_ETIMEDOUT, ":-1\r\n", REDISLOCK_ELOST);
    fail_then_recover(&bad, REDISLOCK_EPROTOCOL, ":0\r\n", REDISLOCK_EEXPIRED);
}

/* Acquires twice on one client whose server refuses every attempt; the
 * rules or the greeting add replies nobody asked for. Any failure is
 * fair; returns 1 on a false OK. */
static int refused_twice(const fs_rule *rules, size_t n, const char *greeting,
                         const char *what)
{
    fs_server *s = fs_start(rules, n, greeting);
    redislock_options co = client_opts();
    redislock_acquire_options ao = th_aopts(10000, 0, 0);
    redislock_client *c = NULL;
    redislock_lock *l;
    redislock_err e;
    int i, bad = 0;

    e = redislock_client_new(&c, s->unix_url, &co);
    test_log("%s: client_new %s (%s)", what, redislock_errname(e),
             redislock_errdetail());
    /* Refusing such a server at once is fine too. */
    for (i = 0; c != NULL && i < 2; i++) {
        l = th_lock(c, "bad:key");
        th_sleep_ms(50); /* a stray reply is in our socket by now */
        e = redislock_acquire(l, &ao);
        test_log("  acquire #%d: %s (%s)", i + 1, redislock_errname(e),
                 redislock_errdetail());
        if (e == REDISLOCK_OK) {
            test_log("  MISMATCH: the server refused this lock");
            bad = 1;
        }
        redislock_lock_free(l);
    }
    redislock_client_free(c);
    fs_stop(s);
    return bad;
}

/*
 * Replies nobody asked for. Before the first request: the real answers
 * then arrive one request late. On an idle pooled connection: a stale
 * reply waits in the socket for the next request. Either way the client
 * may fail, but a lock the server refused must never be reported taken.
 */
void test_badserver_unsolicited_reply(void)
{
    /* Every SET and every acquire script refused... */
    static const fs_rule held[] = {
        FS_ALWAYS("SET", "$-1\r\n"),
        FS_ALWAYS("EVALSHA", "*2\r\n:0\r\n:5000\r\n"),
    };
    /* ...the first one followed by a stray success in the same format. */
    static const fs_rule stale[] = {
        FS_ONCE("SET", "$-1\r\n+OK\r\n"),
        FS_ALWAYS("SET", "$-1\r\n"),
        FS_ONCE("EVALSHA", "*2\r\n:0\r\n:5000\r\n*3\r\n:1\r\n:1\r\n:9\r\n"),
        FS_ALWAYS("EVALSHA", "*2\r\n:0\r\n:5000\r\n"),
    };
    int bad = 0;

    bad += refused_twice(held, 2, "+OK\r\n", "greeting \"+OK\"");
    bad += refused_twice(held, 2, ":1\r\n", "greeting \":1\"");
    bad += refused_twice(held, 2, "+OK\r\n+OK\r\n", "greeting 2 x \"+OK\"");
    bad += refused_twice(stale, 4, NULL, "a stray success after a refusal");
    expect_none(bad);
}

/* Any status but "OK" is not SET's success, whatever its type says. */
void test_badserver_set_status_not_ok(void)
{
    static const bcase cases[] = {
        {OP_ACQUIRE, "+QUEUED\r\n", EPROTO, ACQ},
        {OP_ACQUIRE, "+PONG\r\n", EPROTO, ACQ},
        {OP_ACQUIRE_WAIT, "+\r\n", EPROTO, ACQ},
    };

    RUN_TABLE(cases);
}

/*
 * The holder's TTL comes from the server (the acquire script's {0, pttl},
 * or PTTL): a huge one must not overflow the deadline arithmetic
 * (fail-fast adds it to the clock), and any value must leave the wait
 * bounded by wait_ms.
 */
void test_badserver_extreme_holder_ttl(void)
{
    static const char *const ttls[] = {
        "9223372036854775807", "-9223372036854775808", "-1", "-2", "-3", "0",
    };
    redislock_options co = client_opts();
    char script[64], pttl[32];
    size_t i;
    int ff;

    for (i = 0; i < sizeof ttls / sizeof ttls[0]; i++)
        for (ff = 0; ff < 2; ff++) {
            fs_rule rules[] = {
                FS_ALWAYS("SET", "$-1\r\n"), FS_ALWAYS("EVALSHA", script),
                FS_ALWAYS("PTTL", pttl), FS_ALWAYS("BLPOP", "*-1\r\n")};
            fs_server *s;
            redislock_client *c;
            redislock_lock *l;
            redislock_acquire_options ao = th_aopts(10000, 300, 0);
            int64_t t0, ms;

            snprintf(script, sizeof script, "*2\r\n:0\r\n:%s\r\n", ttls[i]);
            snprintf(pttl, sizeof pttl, ":%s\r\n", ttls[i]);
            s = fs_start(rules, 4, NULL);
            c = th_client_url(s->unix_url, &co);
            l = th_lock(c, "bad:key");
            ao.fail_fast = ff;
            t0 = th_now_ms();
            ASSERT_ERR(redislock_acquire(l, &ao), REDISLOCK_EHELD);
            ms = th_now_ms() - t0;
            test_log("holder TTL %s, fail_fast %d: EHELD in %lld ms after "
                     "%ld SET and %ld EVALSHA, holder_ttl() %lld",
                     ttls[i], ff, (long long)ms, fs_calls(s, "SET"),
                     fs_calls(s, "EVALSHA"),
                     (long long)redislock_holder_ttl(l));
            ASSERT_LE(ms, 300 + slack_ms());
            redislock_lock_free(l);
            redislock_client_free(c);
            fs_stop(s);
        }
}

/* The never-ending replies (fs_floods): the blocking call stops reading
 * long before their end, by its timeout, with a bounded buffer. */
void test_badserver_stream_bounded(void)
{
    const fs_flood *floods = fs_floods;
    size_t i;
    int bad = 0;

    for (i = 0; i < FS_NFLOODS; i++) {
        fs_rule rules[] = {FS_ALWAYS("PING", "+PONG\r\n"),
                           OLD_HELLO,
                           {NULL, floods[i].head, FS_STREAM, floods[i].mib, 0,
                            floods[i].fill}};
        char what[64];

        snprintf(what, sizeof what, "%.*s + %d MiB of \"%.2s\"",
                 (int)strlen(floods[i].head) - 2, floods[i].head, floods[i].mib,
                 floods[i].fill);
        bad += run_rules(rules, 3, NULL, what, OP_ACQUIRE,
                         W2(ETIMEDOUT, EPROTOCOL) | W1(ENOMEM), NULL, 0);
    }
    expect_none(bad);
}
