#include "url.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define RL_DB_MAX 1000000

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Copies n bytes of s, decoding %XX escapes. NULL on a bad escape or on
 * memory exhaustion (*oom tells which). */
static char *decode(const char *s, size_t n, int *oom)
{
    char *out = malloc(n + 1);
    size_t i, j = 0;

    *oom = out == NULL;
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        int hi, lo;

        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        hi = i + 2 < n ? hexval(s[i + 1]) : -1;
        lo = i + 2 < n ? hexval(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[j] = '\0';
    return out;
}

/* Parses a decimal number of at most 9 digits in [lo, hi]; -1 if it is not
 * one. */
static long number(const char *s, size_t n, long lo, long hi)
{
    long v = 0;
    size_t i;

    if (n == 0 || n > 9)
        return -1;
    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < lo || v > hi ? -1 : v;
}

static redislock_err parse_userinfo(const char *s, size_t n, rl__url *u)
{
    const char *colon = memchr(s, ':', n);
    size_t ulen = colon ? (size_t)(colon - s) : n;
    int oom;

    if (ulen > 0) {
        u->user = decode(s, ulen, &oom);
        if (u->user == NULL)
            goto bad;
    }
    if (colon != NULL) {
        u->password = decode(colon + 1, n - ulen - 1, &oom);
        if (u->password == NULL)
            goto bad;
    }
    return REDISLOCK_OK;
bad:
    return oom ? rl__err(REDISLOCK_ENOMEM, "out of memory parsing the URL")
               : rl__err(REDISLOCK_EINVAL,
                         "bad %%-escape in the URL's user or password");
}

static redislock_err parse_hostport(const char *s, size_t n, rl__url *u)
{
    const char *h = s, *end = s + n, *colon;
    size_t hlen;

    if (n > 0 && *s == '[') {
        const char *rb = memchr(s, ']', n);
        if (rb == NULL)
            return rl__err(REDISLOCK_EINVAL, "unclosed '[' in the URL's host");
        h = s + 1;
        hlen = (size_t)(rb - h);
        colon = rb + 1 < end ? rb + 1 : NULL;
        if (colon != NULL && *colon != ':')
            return rl__err(REDISLOCK_EINVAL, "junk after ']' in the URL");
    } else {
        colon = memchr(s, ':', n);
        hlen = colon ? (size_t)(colon - s) : n;
    }
    if (hlen == 0)
        return rl__err(REDISLOCK_EINVAL, "the URL has no host");
    u->host = strndup(h, hlen);
    if (u->host == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory parsing the URL");
    u->port = 6379;
    if (colon != NULL) {
        long p = number(colon + 1, (size_t)(end - colon - 1), 1, 65535);
        /* The text is not echoed: with an unescaped '/' in a password,
         * what looks like the port is part of the password. */
        if (p < 0)
            return rl__err(REDISLOCK_EINVAL,
                           "bad port in the URL: want a number from 1 to "
                           "65535 (a '/' or '@' in a password must be "
                           "written %%2F or %%40)");
        u->port = (int)p;
    }
    return REDISLOCK_OK;
}

static redislock_err parse_db(const char *s, size_t n, rl__url *u)
{
    long db;

    if (n == 0)
        return REDISLOCK_OK;
    db = number(s, n, 0, RL_DB_MAX);
    if (db < 0)
        /* Not echoed either: it may be part of a password (see the port). */
        return rl__err(REDISLOCK_EINVAL,
                       "bad database in the URL: want a number from 0 to %d "
                       "(a '/' or '@' in a password must be written %%2F or "
                       "%%40)",
                       RL_DB_MAX);
    u->db = (int)db;
    return REDISLOCK_OK;
}

static redislock_err parse_tcp(const char *s, rl__url *u)
{
    const char *slash = strchr(s, '/');
    const char *auth_end = slash ? slash : s + strlen(s);
    const char *at = NULL, *p;
    redislock_err err;

    if (strchr(s, '?') != NULL || strchr(s, '#') != NULL)
        return rl__err(REDISLOCK_EINVAL,
                       "redis:// URLs take no query or fragment");
    for (p = s; p < auth_end; p++)
        if (*p == '@')
            at = p;
    if (at != NULL) {
        err = parse_userinfo(s, (size_t)(at - s), u);
        if (err != REDISLOCK_OK)
            return err;
        s = at + 1;
    }
    err = parse_hostport(s, (size_t)(auth_end - s), u);
    if (err != REDISLOCK_OK || slash == NULL)
        return err;
    return parse_db(slash + 1, strlen(slash + 1), u);
}

static redislock_err parse_unix(const char *s, rl__url *u)
{
    const char *q = strchr(s, '?');
    size_t plen = q ? (size_t)(q - s) : strlen(s);

    if (plen == 0 || s[0] != '/')
        return rl__err(REDISLOCK_EINVAL,
                       "unix:// URLs need an absolute socket path, as in "
                       "unix:///run/redis.sock");
    u->path = strndup(s, plen);
    if (u->path == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory parsing the URL");
    if (q == NULL)
        return REDISLOCK_OK;
    if (strncmp(q + 1, "db=", 3) != 0)
        return rl__err(REDISLOCK_EINVAL,
                       "unknown query '%s' in the URL (only ?db=N)", q + 1);
    return parse_db(q + 4, strlen(q + 4), u);
}

redislock_err rl__url_parse(const char *s, rl__url *u)
{
    memset(u, 0, sizeof *u);
    if (s == NULL || *s == '\0')
        return rl__err(REDISLOCK_EINVAL, "empty URL");
    if (strncmp(s, "redis://", 8) == 0)
        return parse_tcp(s + 8, u);
    if (strncmp(s, "unix://", 7) == 0)
        return parse_unix(s + 7, u);
    if (strncmp(s, "rediss://", 9) == 0) {
#ifdef REDISLOCK_HAVE_TLS
        u->tls = 1;
        return parse_tcp(s + 9, u);
#else
        return rl__err(REDISLOCK_ENOTLS,
                       "rediss:// needs TLS, which this build lacks (the "
                       "hiredis it was built against has no TLS support)");
#endif
    }
    /* Name only the scheme: the rest may hold a password. */
    return rl__err(REDISLOCK_EINVAL,
                   "unknown URL scheme '%.*s' (want redis://, unix:// or "
                   "rediss://)",
                   (int)strcspn(s, ":/@"), s);
}

void rl__url_free(rl__url *u)
{
    if (u == NULL)
        return;
    free(u->host);
    free(u->path);
    free(u->user);
    free(u->password);
    memset(u, 0, sizeof *u);
}
