#include "url.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/*
 * A timeout in a query: seconds, as redis-py's socket_timeout takes them
 * (fractions allowed), or with a unit, s or ms, as in Lettuce's
 * "timeout=10s". Positive, at most RL_URL_TIMEOUT_MAX_MS. Returns the
 * milliseconds (a fraction of one rounds up), or -1.
 */
static int64_t query_ms(const char *s, size_t n)
{
    int64_t whole = 0, milli = 0, scale = 1000, unit = 1000, ms;
    size_t i = 0, digits = 0;
    int rest = 0; /* a non-zero digit past the thousandths */

    for (; i < n && isdigit((unsigned char)s[i]) && digits < 12; i++)
        whole = whole * 10 + (s[i] - '0'), digits++;
    if (i < n && s[i] == '.') {
        for (i++; i < n && isdigit((unsigned char)s[i]); i++, digits++) {
            scale /= 10;
            if (scale > 0)
                milli += (s[i] - '0') * scale;
            else
                rest |= s[i] != '0';
        }
    }
    if (digits == 0)
        return -1;
    if (n - i == 2 && strncmp(s + i, "ms", 2) == 0)
        unit = 1;
    else if (n != i && !(n - i == 1 && s[i] == 's'))
        return -1;
    /* milli is in thousandths of the unit; what is left of a millisecond
     * rounds up. */
    ms = whole * unit + (milli * unit + 999 + rest) / 1000;
    return ms > 0 && ms <= RL_URL_TIMEOUT_MAX_MS ? ms : -1;
}

/* The query parameters a URL takes, with the names other clients use:
 * redis-py's socket_timeout and socket_connect_timeout, Lettuce's and
 * Jedis's timeout, and plain connect_timeout and command_timeout. */
static int64_t *query_field(rl__url *u, const char *name, size_t n)
{
    static const struct {
        const char *name;
        int connect;
    } names[] = {
        {"timeout", 0},
        {"command_timeout", 0},
        {"socket_timeout", 0},
        {"connect_timeout", 1},
        {"socket_connect_timeout", 1},
    };
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && strncmp(name, names[i].name, n) == 0)
            return names[i].connect ? &u->connect_timeout_ms
                                    : &u->command_timeout_ms;
    return NULL;
}

#define QUERY_NAMES                                                            \
    "timeout, socket_timeout, command_timeout, connect_timeout, "              \
    "socket_connect_timeout"

/* The TLS parameters of a rediss:// URL's query, by the library's
 * option names and redis-py's; the field, or NULL. */
static char **tls_field(rl__url *u, const char *name, size_t n)
{
    static const struct {
        const char *name;
        size_t at;
    } names[] = {
        {"tls_ca_file", offsetof(rl__url, tls_ca_file)},
        {"ssl_ca_certs", offsetof(rl__url, tls_ca_file)},
        {"tls_ca_dir", offsetof(rl__url, tls_ca_dir)},
        {"ssl_ca_path", offsetof(rl__url, tls_ca_dir)},
        {"tls_cert_file", offsetof(rl__url, tls_cert_file)},
        {"ssl_certfile", offsetof(rl__url, tls_cert_file)},
        {"tls_key_file", offsetof(rl__url, tls_key_file)},
        {"ssl_keyfile", offsetof(rl__url, tls_key_file)},
        {"tls_server_name", offsetof(rl__url, tls_server_name)},
    };
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && strncmp(name, names[i].name, n) == 0)
            return (char **)((char *)u + names[i].at);
    return NULL;
}

#define TLS_NAMES                                                              \
    "tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file, "                   \
    "tls_server_name, tls_insecure"

/* One TLS name=value (v: the value, vn bytes); 1 when name is not one. */
static int tls_param(const char *s, size_t nlen, const char *v, size_t vn,
                     rl__url *u, redislock_err *err)
{
    char **field = tls_field(u, s, nlen);
    int oom;

    if (field == NULL && !(nlen == 12 && strncmp(s, "tls_insecure", 12) == 0))
        return 1;
    if (!u->tls) {
        *err =
            rl__err(REDISLOCK_EINVAL,
                    "%.*s in the URL is for TLS: use rediss://", (int)nlen, s);
        return 0;
    }
    if (field == NULL) {
        if (vn != 1 || (*v != '0' && *v != '1')) {
            *err = rl__err(REDISLOCK_EINVAL,
                           "tls_insecure in the URL: want 1 (do not verify "
                           "the server) or 0");
            return 0;
        }
        u->tls_insecure = *v == '1';
        *err = REDISLOCK_OK;
        return 0;
    }
    free(*field);
    if (vn == 0 || (*field = decode(v, vn, &oom)) == NULL) {
        *field = NULL;
        *err = vn > 0 && oom ? rl__err(REDISLOCK_ENOMEM, "out of memory")
                             : rl__err(REDISLOCK_EINVAL,
                                       "bad %.*s in the URL: want a path (or "
                                       "a name), %%-escaped",
                                       (int)nlen, s);
        return 0;
    }
    *err = REDISLOCK_OK;
    return 0;
}

/* One name=value of a query; db only where db_ok (unix://). */
static redislock_err parse_param(const char *s, size_t n, rl__url *u, int db_ok)
{
    const char *eq = memchr(s, '=', n);
    size_t nlen = eq != NULL ? (size_t)(eq - s) : n;
    int64_t *field = query_field(u, s, nlen), ms;
    redislock_err err;

    if (eq != NULL && db_ok && nlen == 2 && strncmp(s, "db", 2) == 0)
        return parse_db(eq + 1, n - 3, u);
    if (eq != NULL && !tls_param(s, nlen, eq + 1, n - nlen - 1, u, &err))
        return err;
    if (field == NULL || eq == NULL)
        return rl__err(REDISLOCK_EINVAL,
                       "unknown query parameter '%.*s' in the URL (known: "
                       "%s" QUERY_NAMES ", " TLS_NAMES ")",
                       (int)(nlen > 40 ? 40 : nlen), s, db_ok ? "db, " : "");
    if ((ms = query_ms(eq + 1, n - nlen - 1)) < 0)
        return rl__err(REDISLOCK_EINVAL,
                       "bad %.*s in the URL: want a positive number of "
                       "seconds (2.5) or of s or ms (500ms), at most a day",
                       (int)nlen, s);
    *field = ms;
    return REDISLOCK_OK;
}

/* The query after '?': name=value pairs joined by '&'; a later value
 * wins, as in most URL parsers. */
static redislock_err parse_query(const char *q, rl__url *u, int db_ok)
{
    const char *amp;
    size_t n;
    redislock_err err;

    if (strchr(q, '#') != NULL)
        return rl__err(REDISLOCK_EINVAL, "Redis URLs take no fragment ('#')");
    for (;;) {
        amp = strchr(q, '&');
        n = amp != NULL ? (size_t)(amp - q) : strlen(q);
        if (n > 0 && (err = parse_param(q, n, u, db_ok)) != REDISLOCK_OK)
            return err;
        if (amp == NULL)
            return REDISLOCK_OK;
        q = amp + 1;
    }
}

static redislock_err parse_authority(const char *s, rl__url *u)
{
    const char *slash = strchr(s, '/');
    const char *auth_end = slash ? slash : s + strlen(s);
    const char *at = NULL, *p;
    redislock_err err;

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

/* redis://[user[:password]@]host[:port][/db][?query]. */
static redislock_err parse_tcp(const char *s, rl__url *u)
{
    const char *q = strchr(s, '?');
    char *base;
    redislock_err err;

    if (q == NULL) {
        if (strchr(s, '#') != NULL)
            return rl__err(REDISLOCK_EINVAL,
                           "Redis URLs take no fragment ('#')");
        return parse_authority(s, u);
    }
    /* An '@' after the '?' means the '?' is in a password: the query is
     * not echoed, nor is anything after it read. */
    if (strchr(q, '@') != NULL)
        return rl__err(REDISLOCK_EINVAL,
                       "a '?' in the URL's user or password must be written "
                       "%%3F");
    if ((base = strndup(s, (size_t)(q - s))) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory parsing the URL");
    err = parse_authority(base, u);
    free(base);
    return err != REDISLOCK_OK ? err : parse_query(q + 1, u, 0);
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
    return parse_query(q + 1, u, 1);
}

/* Whether s starts with scheme (lower case, with its "://"), in any case:
 * a scheme is case-insensitive (RFC 3986, section 3.1), and redis-cli
 * takes REDIS:// too. The "://" is ASCII, so comparing it so is exact. */
static int has_scheme(const char *s, const char *scheme)
{
    return strncasecmp(s, scheme, strlen(scheme)) == 0;
}

redislock_err rl__url_parse(const char *s, rl__url *u)
{
    memset(u, 0, sizeof *u);
    if (s == NULL || *s == '\0')
        return rl__err(REDISLOCK_EINVAL, "empty URL");
    if (has_scheme(s, "redis://"))
        return parse_tcp(s + 8, u);
    if (has_scheme(s, "unix://"))
        return parse_unix(s + 7, u);
    if (has_scheme(s, "rediss://")) {
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
    free(u->tls_ca_file);
    free(u->tls_ca_dir);
    free(u->tls_cert_file);
    free(u->tls_key_file);
    free(u->tls_server_name);
    memset(u, 0, sizeof *u);
}

int rl__url_is_sentinel(const char *s)
{
    return s != NULL && (has_scheme(s, "redis+sentinel://") ||
                         has_scheme(s, "rediss+sentinel://"));
}

/* A malloc'ed string of the formatted parts; NULL when out of memory. */
static char *joined(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *joined(const char *fmt, ...)
{
    va_list ap;
    char *out;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || (out = malloc((size_t)n + 1)) == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}

/* Splits the query q (n bytes, no '?') into the sentinels' credentials
 * (raw, still %-encoded) and the rest, which goes to every URL. */
static redislock_err split_query(const char *q, size_t n, char *user,
                                 char *pass, char *rest, size_t size)
{
    size_t at = 0, len;

    *user = *pass = *rest = '\0';
    while (at < n) {
        len = strcspn(q + at, "&");
        if (len > n - at)
            len = n - at;
        if (len >= size)
            return rl__err(REDISLOCK_EINVAL, "query parameter too long");
        if (strncmp(q + at, "sentinel_user=", 14) == 0 && len > 14)
            snprintf(user, size, "%.*s", (int)(len - 14), q + at + 14);
        else if (strncmp(q + at, "sentinel_password=", 18) == 0 && len > 18)
            snprintf(pass, size, "%.*s", (int)(len - 18), q + at + 18);
        else if (len > 0 && strlen(rest) + len + 2 < size)
            snprintf(rest + strlen(rest), size - strlen(rest), "%s%.*s",
                     *rest ? "&" : "", (int)len, q + at);
        at += len + 1;
    }
    return REDISLOCK_OK;
}

/* One "host[:port]" of the list (n bytes) as a sentinel's URL. */
static redislock_err sentinel_one(rl__sentinel_url *u, const char *scheme,
                                  const char *auth, const char *h, size_t n,
                                  const char *query)
{
    const char *close = h[0] == '[' ? memchr(h, ']', n) : NULL;
    const char *colon =
        close ? (close + 1 < h + n && close[1] == ':' ? close + 1 : NULL)
              : memchr(h, ':', n);
    char *url;

    if (n == 0)
        return rl__err(REDISLOCK_EINVAL,
                       "empty sentinel address in the sentinel URL's list");
    if (u->n == RL_SENTINELS_MAX)
        return rl__err(REDISLOCK_EINVAL, "more than %d sentinels in the URL",
                       RL_SENTINELS_MAX);
    url = joined("%s://%s%.*s%s%s%s", scheme, auth, (int)n, h,
                 colon ? "" : ":26379", *query ? "?" : "", query);
    if (url == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    u->sentinels[u->n++] = url;
    return REDISLOCK_OK;
}

redislock_err rl__sentinel_url_parse(const char *s, rl__sentinel_url *u)
{
    char suser[256], spass[256], rest[512], auth[520];
    const char *scheme, *hosts, *slash, *q, *at, *h;
    size_t len, hl;
    int oom;
    redislock_err err;

    memset(u, 0, sizeof *u);
    if (!rl__url_is_sentinel(s))
        return rl__err(REDISLOCK_EINVAL, "not a redis+sentinel:// URL");
    /* Written in lower case into the URLs made from it. */
    scheme = has_scheme(s, "rediss+") ? "rediss" : "redis";
    hosts = strstr(s, "://") + 3;
    slash = strchr(hosts, '/');
    if (slash == NULL || slash[1] == '\0' || slash[1] == '/' || slash[1] == '?')
        return rl__err(REDISLOCK_EINVAL,
                       "the sentinel URL names no master: want "
                       "redis+sentinel://host:port[,host:port...]/name");
    /* The data nodes' user and password: before the last '@' ahead of
     * the path. */
    at = NULL;
    for (h = hosts; h < slash; h++)
        if (*h == '@')
            at = h;
    q = strchr(slash, '?');
    len = q ? (size_t)(q - slash) : strlen(slash);
    if ((err = split_query(q ? q + 1 : "", q ? strlen(q + 1) : 0, suser, spass,
                           rest, sizeof rest)) != REDISLOCK_OK)
        return err;
    snprintf(auth, sizeof auth, "%s%s%s%s", suser, *spass ? ":" : "", spass,
             *suser || *spass ? "@" : "");
    /* The path: /name[/db]. */
    hl = strcspn(slash + 1, "/?");
    if ((u->name = decode(slash + 1, hl, &oom)) == NULL)
        return oom ? rl__err(REDISLOCK_ENOMEM, "out of memory")
                   : rl__err(REDISLOCK_EINVAL,
                             "bad %%-escape in the sentinel URL's master name");
    u->node_pre = joined("%s://%.*s%s", scheme, at ? (int)(at - hosts) : 0,
                         hosts, at ? "@" : "");
    u->node_post = joined("%.*s%s%s", (int)(len - 1 - hl), slash + 1 + hl,
                          *rest ? "?" : "", rest);
    u->sentinels = calloc(RL_SENTINELS_MAX, sizeof *u->sentinels);
    if (u->node_pre == NULL || u->node_post == NULL || u->sentinels == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    for (h = at ? at + 1 : hosts; h <= slash; h += hl + 1) {
        hl = strcspn(h, ",/");
        if (h + hl > slash)
            hl = (size_t)(slash - h);
        if ((err = sentinel_one(u, scheme, auth, h, hl, rest)) != 0)
            return err;
        if (h + hl == slash)
            break;
    }
    return REDISLOCK_OK;
}

void rl__sentinel_url_free(rl__sentinel_url *u)
{
    size_t i;

    if (u == NULL)
        return;
    for (i = 0; i < u->n; i++)
        free(u->sentinels[i]);
    free(u->sentinels);
    free(u->name);
    free(u->node_pre);
    free(u->node_post);
    memset(u, 0, sizeof *u);
}
