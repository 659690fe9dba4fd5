#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

const char *cli_quote(const char *s, char *buf, size_t size)
{
    size_t i;

    for (i = 0; s[i] != '\0' && i + 4 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (s[i] != '\0' && i >= 3)
        memcpy(buf + i - 3, "...", 3);
    buf[i] = '\0';
    return buf;
}

static void vreport(const char *ctx, const char *fmt, va_list ap,
                    const char *suffix)
{
    char msg[1024];

    vsnprintf(msg, sizeof msg, fmt, ap);
    if (ctx != NULL)
        fprintf(stderr, "redislock: %s: %s%s\n", ctx, msg, suffix);
    else
        fprintf(stderr, "redislock: %s%s\n", msg, suffix);
}

void cli_err(const char *ctx, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreport(ctx, fmt, ap, "");
    va_end(ap);
}

int cli_usage(const char *ctx, const char *fmt, ...)
{
    char see[64];
    va_list ap;

    /* A command's own help is the shorter read; help's is the overview. */
    if (ctx != NULL && strlen(ctx) < 20 && strcmp(ctx, "help") != 0)
        snprintf(see, sizeof see, " (see 'redislock help %s')", ctx);
    else
        snprintf(see, sizeof see, " (see 'redislock --help')");
    va_start(ap, fmt);
    vreport(ctx, fmt, ap, see);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int cli_exit_for(redislock_err err)
{
    switch (err) {
    case REDISLOCK_OK:
        return CLI_EXIT_OK;
    case REDISLOCK_EHELD:
        return CLI_EXIT_NOT_OBTAINED;
    case REDISLOCK_EINVAL:
    case REDISLOCK_ENOTLS:
        return CLI_EXIT_USAGE;
    case REDISLOCK_ECONNECT:
    case REDISLOCK_ETIMEDOUT:
    case REDISLOCK_EIO:
    case REDISLOCK_ENOQUORUM:
    case REDISLOCK_ENOTDURABLE:
    /* No writable master at that address: for the caller, as if the
     * master were down. */
    case REDISLOCK_EREADONLY:
    /* Not 75 (EX_TEMPFAIL): for run, 75 says the lock was lost. */
    case REDISLOCK_ETRYLATER:
        return CLI_EXIT_UNAVAILABLE;
    case REDISLOCK_EAUTH:
    case REDISLOCK_ENOPERM:
        return CLI_EXIT_NOPERM;
    case REDISLOCK_ECONFIG:
        return CLI_EXIT_CONFIG;
    /* extend: the lease was lengthened, but its holder is asked to give
     * it up; as run's lost lock. */
    case REDISLOCK_EREVOKED:
        return CLI_EXIT_LOST;
    default:
        return CLI_EXIT_SOFTWARE;
    }
}

const char *cli_detail(char *buf, size_t size)
{
    return cli_quote(redislock_errdetail(), buf, size);
}

int cli_fail(const char *ctx, redislock_err err, const char *what)
{
    char detail[CLI_DETAIL_MAX];

    /* Copy the detail first: it is only valid until the next call. */
    return cli_fail_with(ctx, err, what, cli_detail(detail, sizeof detail));
}

int cli_fail_with(const char *ctx, redislock_err err, const char *what,
                  const char *detail)
{
    const char *msg = redislock_strerror(err);

    if (detail[0] == '\0' || strcmp(detail, msg) == 0)
        cli_err(ctx, "%s: %s", what, msg);
    else
        cli_err(ctx, "%s: %s (%s)", what, msg, detail);
    return cli_exit_for(err);
}

static int parse_duration(const char *ctx, const char *name, const char *s,
                          int64_t *ms)
{
    char q[CLI_QUOTE_MAX];
    cli_dur_err e = cli_parse_duration(s, ms);

    if (e != CLI_DUR_OK)
        return cli_usage(ctx, "invalid %s '%s': %s", name,
                         cli_quote(s, q, sizeof q), cli_dur_strerror(e));
    /* A bare number is seconds; past the 30-day cap it was surely meant
     * in another unit (a TTL in ms, as redis-cli's PX takes). */
    if (s[strspn(s, "0123456789.")] == '\0' && *ms > REDISLOCK_TTL_MAX_MS)
        return cli_usage(ctx,
                         "invalid %s '%s': more than 30 days in seconds; "
                         "did you mean %sms?",
                         name, cli_quote(s, q, sizeof q), q);
    return 0;
}

/* A duration up to REDISLOCK_TTL_MAX_MS, the library's limit for every
 * lease-like time; zero only where zero_ok. */
static int parse_span(const char *ctx, const char *name, const char *s,
                      int zero_ok, int64_t *out_ms)
{
    char q[CLI_QUOTE_MAX];
    int64_t ms = 0;

    if (parse_duration(ctx, name, s, &ms) != 0)
        return CLI_EXIT_USAGE;
    if (ms == 0 && !zero_ok)
        return cli_usage(ctx, "invalid %s '%s': must be greater than zero",
                         name, cli_quote(s, q, sizeof q));
    if (ms > REDISLOCK_TTL_MAX_MS)
        return cli_usage(ctx, "invalid %s '%s': longer than 30 days", name,
                         cli_quote(s, q, sizeof q));
    *out_ms = ms;
    return 0;
}

int cli_parse_ttl(const char *ctx, const char *s, int64_t *ttl_ms)
{
    return parse_span(ctx, "TTL", s, 0, ttl_ms);
}

int cli_parse_delay(const char *ctx, const char *name, const char *s,
                    int64_t *ms)
{
    return parse_span(ctx, name, s, 0, ms);
}

int cli_parse_hold(const char *ctx, const char *s, int64_t *ms)
{
    return parse_span(ctx, "hold-after time", s, 1, ms);
}

int cli_parse_span(const char *ctx, const char *name, const char *s,
                   int64_t *ms)
{
    return parse_span(ctx, name, s, 1, ms);
}

int cli_parse_timeout(const char *ctx, const char *name, const char *s,
                      int64_t *ms)
{
    char q[CLI_QUOTE_MAX];
    int64_t v = 0;

    if (parse_duration(ctx, name, s, &v) != 0)
        return CLI_EXIT_USAGE;
    if (v == 0 || v > CLI_TIMEOUT_MAX_MS)
        return cli_usage(ctx,
                         "invalid %s '%s': want more than 0, at most a day",
                         name, cli_quote(s, q, sizeof q));
    *ms = v;
    return 0;
}

int cli_parse_wait(const char *ctx, const char *s, int64_t *wait_ms)
{
    return parse_duration(ctx, "wait time", s, wait_ms);
}

/* A whole number from 0 to max, or -1. */
static long parse_uint(const char *s, long max)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v > max)
        return -1;
    return v;
}

int cli_parse_code(const char *ctx, const char *s, int *code)
{
    char q[CLI_QUOTE_MAX];
    long v = parse_uint(s, 255);

    if (v < 0)
        return cli_usage(ctx, "invalid exit code '%s': must be 0 to 255",
                         cli_quote(s, q, sizeof q));
    *code = (int)v;
    return 0;
}

int cli_parse_count(const char *ctx, const char *name, const char *s, int max,
                    int *n)
{
    char q[CLI_QUOTE_MAX];
    long v = parse_uint(s, max);

    if (v < 1)
        return cli_usage(ctx, "invalid %s '%s': must be 1 to %d", name,
                         cli_quote(s, q, sizeof q), max);
    *n = (int)v;
    return 0;
}

int cli_check_key(const char *ctx, const char *key)
{
    size_t i, n = strlen(key);

    if (n == 0)
        return cli_usage(ctx, "the key is empty");
    if (n > REDISLOCK_KEY_MAX)
        return cli_usage(ctx, "the key is longer than %d bytes",
                         REDISLOCK_KEY_MAX);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        /* Keys are printed in messages and status lines; a CR or LF would
         * split them. */
        if (c < 0x20 || c == 0x7f)
            return cli_usage(ctx,
                             "the key contains control character 0x%02x "
                             "at byte %zu",
                             c, i);
    }
    return 0;
}

int cli_check_token(const char *ctx, const char *what, const char *token)
{
    const char *p;

    if (*token == '\0')
        return cli_usage(ctx, "the %s is empty", what);
    /* A token travels through environment variables and shell scripts,
     * where a control character would only be a trap. */
    for (p = token; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cli_usage(ctx, "the %s contains a control character", what);
    return 0;
}

int cli_check_value(const char *ctx, const char *value)
{
    size_t i, n = strlen(value);

    if (n > REDISLOCK_ELECT_VALUE_MAX)
        return cli_usage(ctx, "--value of %zu bytes: at most %d", n,
                         REDISLOCK_ELECT_VALUE_MAX);
    for (i = 0; i < n; i++)
        if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e)
            return cli_usage(ctx,
                             "--value has a byte that is not printable "
                             "ASCII at %zu: encode it (hex, base64)",
                             i);
    return 0;
}

int cli_sequencer(const char *ctx, redislock_lock *l, char *buf)
{
    redislock_err err = redislock_sequencer(l, buf, REDISLOCK_SEQUENCER_MAX);

    if (err == REDISLOCK_OK)
        return 0;
    return cli_fail(ctx, err, "cannot make the lock's sequencer");
}
