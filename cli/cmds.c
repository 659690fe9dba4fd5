/* The subcommands that make one request: acquire, release, extend,
 * status. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char *const key_names[] = {"KEY", "TOKEN"};

/* Prints the token for the caller to keep. A token nobody saw would leave
 * the lock held until its TTL for nothing, so it is released when the
 * write fails. */
static int print_token(const char *ctx, redislock_lock *l)
{
    if (printf("%s\n", redislock_token(l)) < 0 || fflush(stdout) != 0) {
        (void)redislock_release(l);
        cli_err(ctx, "cannot write the token to standard output");
        return CLI_EXIT_SOFTWARE;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_acquire(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        {'u', "url", 1},     {'h', "help", 0},
        {'t', "ttl", 1},     {'w', "wait", 1},
        {'w', "timeout", 1}, {'n', "nonblock", 0},
        {'n', "no-wait", 0}, {'E', "conflict-exit-code", 1},
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    char q[CLI_QUOTE_MAX];
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    sigset_t stop;
    int64_t start;
    redislock_err err;
    int rc, sig;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 1, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if ((rc = cli_check_key(ctx, argv[o.operand])) != 0 ||
        (rc = cli_open(ctx, &o.g, argv[o.operand], 0, &c, &l)) != 0)
        return rc;
    /* A signal while waiting ends the wait cleanly, even when it comes
     * just as the lock is taken. */
    cli_signal_set(&stop);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    cli_quote(argv[o.operand], q, sizeof q);
    err = cli_acquire(l, o.ttl_ms, o.wait_ms, &stop, &sig, &start);
    if (sig != 0) {
        rc = 128 + sig;
    } else if (err == REDISLOCK_EHELD) {
        cli_err(ctx, "lock '%s' is held by another owner", q);
        rc = o.conflict_code;
    } else if (err != REDISLOCK_OK) {
        rc = cli_fail(ctx, err, "cannot acquire lock");
    } else {
        rc = print_token(ctx, l);
    }
    cli_close(c, l);
    return rc;
}

/* The exit status of release and extend. */
static int outcome(const char *ctx, redislock_err err, const char *key,
                   const char *verb)
{
    char q[CLI_QUOTE_MAX], what[CLI_QUOTE_MAX + 32];

    cli_quote(key, q, sizeof q);
    switch (err) {
    case REDISLOCK_OK:
        return CLI_EXIT_OK;
    case REDISLOCK_EEXPIRED:
        cli_err(ctx, "lock '%s' had expired and is free", q);
        return CLI_EXIT_FREE;
    case REDISLOCK_ELOST:
        cli_err(ctx, "lock '%s' is held by another owner", q);
        return CLI_EXIT_OTHER_OWNER;
    default:
        snprintf(what, sizeof what, "cannot %s lock '%s'", verb, q);
        return cli_fail(ctx, err, what);
    }
}

static int check_token(const char *ctx, const char *token)
{
    const char *p;

    if (*token == '\0')
        return cli_usage(ctx, "the token is empty");
    for (p = token; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cli_usage(ctx, "the token contains a control character");
    return 0;
}

/* Shared by release and extend: both act for a token from acquire. */
static int act_for_token(int argc, char **argv, const cli_global *g,
                         const cli_optdef *defs)
{
    const char *ctx = argv[0];
    const char *key, *token;
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    redislock_err err;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 2, 2, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    key = argv[o.operand];
    token = argv[o.operand + 1];
    if ((rc = cli_check_key(ctx, key)) != 0 ||
        (rc = check_token(ctx, token)) != 0 ||
        (rc = cli_open(ctx, &o.g, key, 0, &c, &l)) != 0)
        return rc;
    err = redislock_adopt(l, token);
    if (err != REDISLOCK_OK)
        rc = cli_fail(ctx, err, "invalid token");
    else if (strcmp(ctx, "release") == 0)
        rc = outcome(ctx, redislock_release(l), key, "release");
    else
        rc = outcome(ctx, redislock_extend(l, o.ttl_ms), key, "extend");
    cli_close(c, l);
    return rc;
}

int cli_cmd_release(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        {'u', "url", 1},
        {'h', "help", 0},
        {0, NULL, 0},
    };

    return act_for_token(argc, argv, g, defs);
}

int cli_cmd_extend(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        {'u', "url", 1},
        {'h', "help", 0},
        {'t', "ttl", 1},
        {0, NULL, 0},
    };

    return act_for_token(argc, argv, g, defs);
}

/* The length of a valid UTF-8 sequence at p, or 0 if there is none. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned long cp;
    size_t n, i;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        n = 2, cp = p[0] & 0x1fUL;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        n = 3, cp = p[0] & 0x0fUL;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        n = 4, cp = p[0] & 0x07UL;
    else
        return 0;
    /* The terminating NUL fails the continuation test, so this never
     * reads past the string. */
    for (i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fUL);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* Prints s as a JSON string. Keys are bytes, JSON text is UTF-8: a byte
 * that is not part of valid UTF-8 becomes U+FFFD. */
static void json_string(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n;

    putchar('"');
    while (*p != '\0') {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7f) {
            printf("\\u%04x", *p++);
        } else if ((n = utf8_len(p)) > 0) {
            fwrite(p, 1, n, stdout);
            p += n;
        } else {
            fputs("\\ufffd", stdout);
            p++;
        }
    }
    putchar('"');
}

static void print_status(const char *key, int64_t ttl, int json)
{
    if (!json) {
        if (ttl == REDISLOCK_TTL_FREE)
            puts("free");
        else
            printf("held ttl_ms=%lld\n", (long long)ttl);
        return;
    }
    fputs("{\"key\":", stdout);
    json_string(key);
    if (ttl == REDISLOCK_TTL_FREE)
        puts(",\"held\":false}");
    else
        printf(",\"held\":true,\"ttl_ms\":%lld}\n", (long long)ttl);
}

int cli_cmd_status(int argc, char **argv, const cli_global *g)
{
    static const cli_optdef defs[] = {
        {'u', "url", 1},
        {'h', "help", 0},
        {CLI_ID_JSON, "json", 0},
        {0, NULL, 0},
    };
    const char *ctx = argv[0];
    redislock_client *c;
    redislock_lock *l;
    cli_cmdopts o;
    redislock_err err;
    int64_t ttl = 0;
    int rc;

    rc = cli_cmd_options(argc, argv, g, defs, 1, 1, key_names, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if ((rc = cli_check_key(ctx, argv[o.operand])) != 0 ||
        (rc = cli_open(ctx, &o.g, argv[o.operand], 0, &c, &l)) != 0)
        return rc;
    err = redislock_ttl(l, &ttl);
    if (err != REDISLOCK_OK)
        rc = cli_fail(ctx, err, "cannot read the lock's TTL");
    else
        print_status(argv[o.operand], ttl, o.json);
    cli_close(c, l);
    return rc;
}
