/* Connecting: the Redis URLs, the client and the lock handle. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "duration.h"

static const char *env_url(void)
{
    static const char *const vars[] = {"REDISLOCK_URL", "REDIS_URL"};
    size_t i;

    /* An empty variable counts as unset, as shells make that easy. */
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0')
            return v;
    }
    return "redis://127.0.0.1:6379";
}

/*
 * Where a URL's password may be: from after the user name (or, with no
 * ':' before the last '@', from the start of the user part) up to the
 * last '@'. The last one, because a password with an unescaped '@', '/',
 * '?' or '#' in it moves the first '@' or ends the host part early: the
 * URL is then misread, and whatever the library quotes of it may be part
 * of the password. Returns 0 when there is no such place (no '@', or a
 * unix:// socket path, which takes no credentials).
 */
static int secret_span(const char *url, size_t *start, size_t *end)
{
    const char *at = strrchr(url, '@'), *auth = strstr(url, "://");
    const char *colon;

    if (at == NULL || (strncasecmp(url, "unix://", 7) == 0 && url[7] == '/'))
        return 0;
    auth = auth != NULL && auth < at ? auth + 3 : url;
    colon = memchr(auth, ':', (size_t)(at - auth));
    *start = (size_t)((colon != NULL ? colon + 1 : auth) - url);
    *end = (size_t)(at - url);
    return 1;
}

/* Whether the library may have misread url's credentials (see
 * secret_span): no "scheme://" before them, or a '/', '?' or '#' among
 * them. Its error detail may then quote part of the password. */
static int ambiguous_url(const char *url)
{
    const char *auth = strstr(url, "://");
    size_t start, end;

    if (!secret_span(url, &start, &end))
        return 0;
    if (auth == NULL || (size_t)(auth - url) + 3 > end)
        return 1;
    auth += 3;
    return strcspn(auth, "/?#") < (size_t)(url + end - auth);
}

/* Copies url for a message with its password, if any, replaced by "***".
 * "user:secret@" keeps the user; a lone "secret@" may be a password too,
 * so all of it goes. */
static const char *redact_url(const char *url, char *buf, size_t size)
{
    char tmp[CLI_QUOTE_MAX], *pw;
    size_t start, end;

    if (!secret_span(url, &start, &end))
        snprintf(tmp, sizeof tmp, "%s", url);
    else
        snprintf(tmp, sizeof tmp, "%.*s***%s", (int)start, url, url + end);
    /* A redis+sentinel:// URL's sentinel_password too. */
    if ((pw = strstr(tmp, "sentinel_password=")) != NULL) {
        pw += 18;
        memmove(pw + 3, pw + strcspn(pw, "&#"),
                strlen(pw + strcspn(pw, "&#")) + 1);
        memcpy(pw, "***", 3);
    }
    return cli_quote(tmp, buf, size);
}

/* Said instead of the library's detail when that may quote a password. */
#define ESCAPE_HINT                                                            \
    "a '/', '?', '#' or '@' in a user name or password must be written "       \
    "%2F, %3F, %23 or %40"

/* The message for a URL the library could not read. */
static int bad_url(const char *ctx, const char *shown, const char *url)
{
    char detail[CLI_DETAIL_MAX];

    if (ambiguous_url(url)) {
        cli_err(ctx, "invalid Redis URL '%s': %s", shown,
                strstr(url, "://") == NULL
                    ? "it needs a scheme: redis://, unix:// or rediss://"
                    : ESCAPE_HINT);
        return CLI_EXIT_USAGE;
    }
    /* "invalid argument" says less than the detail alone. */
    cli_detail(detail, sizeof detail);
    cli_err(ctx, "invalid Redis URL '%s': %s", shown,
            detail[0] != '\0' ? detail : redislock_strerror(REDISLOCK_EINVAL));
    return CLI_EXIT_USAGE;
}

static int fail_url(const char *ctx, redislock_err err, const char *url)
{
    char shown[CLI_QUOTE_MAX], what[CLI_QUOTE_MAX + 32];

    redact_url(url, shown, sizeof shown);
    if (err == REDISLOCK_EINVAL)
        return bad_url(ctx, shown, url);
    snprintf(what, sizeof what, "Redis %s '%s'",
             err == REDISLOCK_ENOTLS ? "URL" : "at", shown);
    return cli_fail(ctx, err, what);
}

/* The option that says how several URLs are used, for messages. */
static const char *mode_option(const cli_global *g)
{
    return g->redlock ? "--redlock" : g->cluster ? "--cluster" : "--shard";
}

/* A client over several servers failed: the library's detail names the
 * server (or the problem with the list), so the URLs are not repeated. */
static int fail_servers(const char *ctx, const cli_global *g,
                        const char *const *urls, size_t n, redislock_err err)
{
    char detail[CLI_DETAIL_MAX];
    size_t i;

    for (i = 0; err == REDISLOCK_EINVAL && i < n; i++)
        if (ambiguous_url(urls[i])) {
            cli_err(ctx, "invalid Redis URLs for %s: %s", mode_option(g),
                    ESCAPE_HINT);
            return CLI_EXIT_USAGE;
        }
    if (err == REDISLOCK_EINVAL) {
        cli_detail(detail, sizeof detail);
        cli_err(ctx, "invalid Redis URLs for %s: %s", mode_option(g),
                detail[0] != '\0' ? detail : redislock_strerror(err));
        return CLI_EXIT_USAGE;
    }
    return cli_fail(ctx, err,
                    g->redlock   ? "Redlock servers"
                    : g->cluster ? "Redis Cluster"
                                 : "Redis shards");
}

/* Usage errors in the URL list and the prefix, found before connecting. */
static int check_global(const char *ctx, const cli_global *g)
{
    char q[CLI_QUOTE_MAX];
    size_t i, j;

    if (g->shard + g->redlock + g->cluster + (g->sentinel != NULL) > 1)
        return cli_usage(ctx, "--shard, --redlock, --cluster and --sentinel "
                              "exclude one another");
    if (g->nurls > 1 && !g->shard && !g->redlock && !g->cluster &&
        g->sentinel == NULL)
        return cli_usage(ctx, "several Redis URLs need --shard, --redlock, "
                              "--cluster or --sentinel");
    if (g->sentinel != NULL && g->nurls == 0)
        return cli_usage(ctx, "--sentinel needs the sentinels' addresses: "
                              "-u redis://host:port, once for each");
    for (i = 0; i < g->nurls; i++) {
        if (*g->urls[i] == '\0')
            return cli_usage(ctx, "the Redis URL is empty");
        for (j = 0; j < i; j++)
            if (strcmp(g->urls[i], g->urls[j]) == 0)
                return cli_usage(ctx, "Redis URL '%s' is given twice",
                                 redact_url(g->urls[i], q, sizeof q));
    }
    if (g->prefix == NULL)
        return 0;
    if (strlen(g->prefix) > REDISLOCK_KEY_MAX)
        return cli_usage(ctx, "the prefix is longer than %d bytes",
                         REDISLOCK_KEY_MAX);
    /* Part of every key, so held to the keys' rule. */
    for (i = 0; g->prefix[i] != '\0'; i++)
        if ((unsigned char)g->prefix[i] < 0x20 || g->prefix[i] == 0x7f)
            return cli_usage(ctx, "the prefix contains a control character");
    return 0;
}

/*
 * The timeout url's query sets (see redislock_client_new(3)): for the
 * connect timeout or the command timeout. Returns 1 with *ms, or 0 when
 * the query sets none (or one the library will refuse anyway).
 */
static int url_timeout(const char *url, int connect, int64_t *ms)
{
    static const char *const names[2][3] = {
        {"timeout=", "socket_timeout=", "command_timeout="},
        {"connect_timeout=", "socket_connect_timeout=", NULL},
    };
    const char *p = strchr(url, '?');
    char val[32];
    size_t i, n, vlen;
    int found = 0;

    while (p != NULL) {
        p++;
        n = strcspn(p, "&#");
        for (i = 0; i < 3 && names[connect][i] != NULL; i++) {
            size_t len = strlen(names[connect][i]);
            vlen = n - len;
            /* The last one wins, as in the library. */
            if (n > len && vlen < sizeof val &&
                strncmp(p, names[connect][i], len) == 0) {
                memcpy(val, p + len, vlen);
                val[vlen] = '\0';
                found |= cli_parse_duration(val, ms) == CLI_DUR_OK;
            }
        }
        p = p[n] == '&' ? p + n : NULL;
    }
    return found;
}

/* The shortest timeout the URLs in use set, or 0 when none sets one. */
static int64_t urls_timeout(const cli_global *g, int connect)
{
    const char *one = env_url();
    const char *const *urls = g->nurls > 0 ? g->urls : &one;
    size_t i, n = g->nurls > 0 ? g->nurls : 1;
    int64_t best = 0, ms;

    for (i = 0; i < n; i++)
        if (url_timeout(urls[i], connect, &ms) && (best == 0 || ms < best))
            best = ms;
    return best;
}

/* One timeout by the precedence of cli_set_timeouts: *set gets what the
 * library is told (0: the URL's, else its default); returns what
 * applies. */
static int64_t pick_timeout(int64_t opt, int64_t url, int64_t env, int64_t dflt,
                            int64_t cap, int64_t *set)
{
    int64_t v = opt > 0 ? opt : url > 0 ? url : env > 0 ? env : dflt;

    *set = opt > 0 ? opt : url > 0 ? 0 : env;
    if (cap > 0 && v > cap)
        v = *set = cap;
    return v;
}

int64_t cli_set_timeouts(const cli_global *g, int64_t cap_ms,
                         redislock_options *o)
{
    int64_t conn, cmd;

    conn = pick_timeout(
        g->connect_timeout_ms, urls_timeout(g, 1), g->env_connect_timeout_ms,
        REDISLOCK_DEFAULT_CONNECT_TIMEOUT_MS, cap_ms, &o->connect_timeout_ms);
    cmd = pick_timeout(
        g->command_timeout_ms, urls_timeout(g, 0), g->env_command_timeout_ms,
        REDISLOCK_DEFAULT_COMMAND_TIMEOUT_MS, cap_ms, &o->command_timeout_ms);
    return conn > cmd ? conn : cmd;
}

int cli_load_env(cli_global *g)
{
    static const char *const vars[2] = {"REDISLOCK_CONNECT_TIMEOUT",
                                        "REDISLOCK_COMMAND_TIMEOUT"};
    int64_t *fields[2] = {&g->env_connect_timeout_ms,
                          &g->env_command_timeout_ms};
    const char *v;
    int i;

    for (i = 0; i < 2; i++) {
        v = getenv(vars[i]);
        if (v != NULL && *v != '\0' &&
            cli_parse_timeout(NULL, vars[i], v, fields[i]) != 0)
            return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Appends s to buf (of size bytes, holding a string) with every byte but
 * the URL's unreserved ones %-escaped. */
static void append_escaped(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);

    for (; *s != '\0' && n + 4 < size; s++) {
        unsigned char ch = (unsigned char)*s;

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL)
            buf[n++] = (char)ch;
        else
            n += (size_t)snprintf(buf + n, size - n, "%%%02X", ch);
    }
    buf[n] = '\0';
}

/* The scheme of a sentinel's -u URL ("redis" or "rediss"), its
 * credentials (*auth, *alen bytes, raw) and its host:port (*host, *hl
 * bytes); NULL when it is not redis://[[user]:password@]host[:port]. */
static const char *sentinel_part(const char *u, const char **auth, size_t *alen,
                                 const char **host, size_t *hl)
{
    const char *s = strncasecmp(u, "rediss://", 9) == 0  ? "rediss"
                    : strncasecmp(u, "redis://", 8) == 0 ? "redis"
                                                         : NULL;
    const char *at;

    if (s == NULL)
        return NULL;
    *auth = u + strlen(s) + 3;
    at = strrchr(*auth, '@');
    *alen = at != NULL ? (size_t)(at - *auth) : 0;
    *host = at != NULL ? at + 1 : *auth;
    *hl = strcspn(*host, "/?#");
    return *hl > 0 && (*host)[*hl] == '\0' ? s : NULL;
}

/*
 * The redis+sentinel:// URL that --sentinel NAME and the -u URLs of the
 * sentinels (redis://[[user]:password@]host[:port], all of one scheme and
 * one password) stand for, into buf: the sentinels' credentials become
 * its sentinel_user and sentinel_password; the data nodes' password comes
 * from --password-file or $REDISCLI_AUTH. Returns 0, or the usage exit
 * status.
 */
static int sentinel_url(const char *ctx, const cli_global *g, char *buf,
                        size_t size)
{
    const char *scheme = NULL, *s, *auth0 = NULL, *auth, *host, *colon;
    char q[CLI_QUOTE_MAX], cred[512];
    size_t i, alen0 = 0, alen, hl;

    snprintf(buf, size, "%s", "");
    for (i = 0; i < g->nurls; i++) {
        s = sentinel_part(g->urls[i], &auth, &alen, &host, &hl);
        if (s == NULL || (scheme != NULL && strcmp(s, scheme) != 0) ||
            (auth0 != NULL && (alen != alen0 || memcmp(auth, auth0, alen))))
            return cli_usage(ctx,
                             "with --sentinel, each -u is a sentinel's "
                             "redis://[[user]:password@]host[:port], all of "
                             "one scheme and password, not '%s'",
                             redact_url(g->urls[i], q, sizeof q));
        if (scheme == NULL) {
            scheme = s;
            auth0 = auth;
            alen0 = alen;
            snprintf(buf, size, "%s+sentinel://", s);
        }
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%.*s",
                 i == 0 ? "" : ",", (int)hl, host);
    }
    snprintf(buf + strlen(buf), size - strlen(buf), "/");
    append_escaped(buf, size, g->sentinel);
    if (alen0 > 0) {
        /* Still %-escaped, as the query takes them. */
        colon = memchr(auth0, ':', alen0);
        snprintf(cred, sizeof cred, "%.*s", (int)alen0, auth0);
        if (colon == NULL)
            snprintf(buf + strlen(buf), size - strlen(buf), "?sentinel_user=%s",
                     cred);
        else if (colon == auth0)
            snprintf(buf + strlen(buf), size - strlen(buf),
                     "?sentinel_password=%s", cred + 1);
        else
            snprintf(buf + strlen(buf), size - strlen(buf),
                     "?sentinel_user=%.*s&sentinel_password=%s",
                     (int)(colon - auth0), cred, cred + (colon - auth0) + 1);
    }
    if (strlen(buf) + 1 >= size)
        return cli_usage(ctx, "the sentinels' URLs are too long");
    return 0;
}

/* Whether u is a TLS URL (rediss://, rediss+sentinel://; any case). */
static int tls_url(const char *u)
{
    return strncasecmp(u, "rediss://", 9) == 0 ||
           strncasecmp(u, "rediss+sentinel://", 18) == 0;
}

/* Whether a TLS option that needs a TLS URL was given. */
static int tls_options(const cli_global *g)
{
    return g->cacert != NULL || g->cacertdir != NULL || g->cert != NULL ||
           g->tls_key != NULL || g->sni != NULL || g->insecure;
}

/* u as --tls makes it (redis:// and redis+sentinel:// become their TLS
 * schemes), malloc'ed, into *out; 0, or the usage exit status. */
static int tls_scheme(const char *ctx, const cli_global *g, const char *u,
                      char **out)
{
    char q[CLI_QUOTE_MAX];
    size_t n = strlen(u) + 2;

    if (g->tls && strncasecmp(u, "unix://", 7) == 0)
        return cli_usage(ctx, "--tls: '%s' is a unix socket, which has no TLS",
                         redact_url(u, q, sizeof q));
    if ((*out = malloc(n)) == NULL)
        return cli_fail(ctx, REDISLOCK_ENOMEM, "the Redis URL");
    if (g->tls && strncasecmp(u, "redis://", 8) == 0)
        snprintf(*out, n, "rediss://%s", u + 8);
    else if (g->tls && strncasecmp(u, "redis+sentinel://", 17) == 0)
        snprintf(*out, n, "rediss+sentinel://%s", u + 17);
    else
        snprintf(*out, n, "%s", u);
    return 0;
}

/* *u (malloc'ed, replaced) with --cacertdir and --insecure in its query,
 * as the library takes them (tls_ca_dir, tls_insecure); 0, or the exit
 * status. */
static int tls_query(const char *ctx, const cli_global *g, char **u)
{
    char q[CLI_QUOTE_MAX], *grown;
    size_t n;

    if (tls_options(g) && !tls_url(*u))
        return cli_usage(ctx,
                         "TLS options (--cacert, --cert, ...) need TLS: give "
                         "rediss:// URLs, or --tls, not '%s'",
                         redact_url(*u, q, sizeof q));
    if (g->cacertdir == NULL && !g->insecure)
        return 0;
    n = strlen(*u) + 32 + (g->cacertdir ? 3 * strlen(g->cacertdir) : 0);
    if ((grown = realloc(*u, n)) == NULL)
        return cli_fail(ctx, REDISLOCK_ENOMEM, "the Redis URL");
    *u = grown;
    if (g->cacertdir != NULL) {
        snprintf(grown + strlen(grown), n - strlen(grown),
                 "%stls_ca_dir=", strchr(grown, '?') ? "&" : "?");
        append_escaped(grown, n, g->cacertdir);
    }
    if (g->insecure)
        snprintf(grown + strlen(grown), n - strlen(grown), "%stls_insecure=1",
                 strchr(grown, '?') ? "&" : "?");
    return 0;
}

/* The client's URLs with the TLS options applied: in t (malloc'ed, n of
 * them, free with free_urls), the one of a --sentinel too. */
typedef struct tls_urls {
    char *u[CLI_URLS_MAX];
    size_t n;
} tls_urls;

static void free_urls(tls_urls *t)
{
    while (t->n > 0)
        free(t->u[--t->n]);
}

static int make_urls(const char *ctx, const cli_global *g, tls_urls *t)
{
    cli_global sg = *g;
    char sent[2600];
    const char *one = env_url();
    size_t i, n = g->nurls > 0 ? g->nurls : 1;
    int rc;

    t->n = 0;
    for (i = 0; i < n; i++) {
        if ((rc = tls_scheme(ctx, g, g->nurls > 0 ? g->urls[i] : one,
                             &t->u[t->n])) != 0)
            return rc;
        sg.urls[t->n] = t->u[t->n];
        t->n++;
    }
    if (g->sentinel != NULL) {
        if ((rc = sentinel_url(ctx, &sg, sent, sizeof sent)) != 0)
            return rc;
        free_urls(t);
        if ((t->u[0] = strdup(sent)) == NULL)
            return cli_fail(ctx, REDISLOCK_ENOMEM, "the Redis URL");
        t->n = 1;
    }
    for (i = 0; i < t->n; i++)
        if ((rc = tls_query(ctx, g, &t->u[i])) != 0)
            return rc;
    return 0;
}

int cli_connect(const char *ctx, const cli_global *g, int64_t cap_ms,
                const cli_events *ev, redislock_client **c)
{
    redislock_options o;
    tls_urls t;
    redislock_err err;
    int rc;

    *c = NULL;
    if ((rc = check_global(ctx, g)) != 0)
        return rc;
    memset(&o, 0, sizeof o);
    (void)cli_set_timeouts(g, cap_ms, &o);
    /* One connection per server is all a single-threaded tool uses. */
    o.max_connections = 1;
    o.prefix = g->prefix;
    o.password = g->password;
    o.wait_replicas = g->wait_replicas;
    o.wait_replicas_timeout_ms = g->wait_replicas_timeout_ms;
    o.wait_replicas_lenient = g->wait_replicas_lenient;
    o.wait_aof_local = g->wait_aof_local;
    o.wait_aof_replicas = g->wait_aof_replicas;
    o.strict = g->strict;
    o.tls_ca_file = g->cacert;
    o.tls_cert_file = g->cert;
    o.tls_key_file = g->tls_key;
    o.tls_server_name = g->sni;
    if (ev != NULL && (ev->verbose || ev->renewed_fd > 2)) {
        o.on_event = cli_on_event;
        o.on_event_arg = (void *)ev;
    }
    if ((rc = make_urls(ctx, g, &t)) != 0) {
        free_urls(&t);
        return rc;
    }
    if (!g->shard && !g->redlock && !g->cluster) {
        err = redislock_client_new(c, t.u[0], &o);
        rc = err == REDISLOCK_OK ? 0 : fail_url(ctx, err, t.u[0]);
    } else {
        const char *const *urls = (const char *const *)t.u;

        err = g->redlock   ? redislock_client_new_redlock(c, urls, t.n, &o)
              : g->cluster ? redislock_client_new_cluster(c, urls, t.n, &o)
                           : redislock_client_new_sharded(c, urls, t.n, &o);
        rc = err == REDISLOCK_OK ? 0 : fail_servers(ctx, g, urls, t.n, err);
    }
    free_urls(&t);
    return rc;
}

/* Reads the first line of the file at fd into buf (size bytes, at most
 * CLI_PASSWORD_MAX + 1), byte by byte: nothing after the line is
 * consumed, so that standard input ("-") keeps the rest for run's
 * command. Returns its length, or -1 with errno, or -2 when too long. */
static ssize_t read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;
    ssize_t got;
    char c;

    while ((got = read(fd, &c, 1)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (c == '\n')
            break;
        if (n + 1 >= size)
            return -2;
        buf[n++] = c;
    }
    /* A file written on Windows ends its lines with CR LF. */
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    return (ssize_t)n;
}

int cli_load_password(cli_global *g)
{
    char q[CLI_QUOTE_MAX];
    const char *f = g->password_file;
    ssize_t n;
    int fd, saved;

    if (f == NULL)
        return 0;
    cli_quote(f, q, sizeof q);
    g->password = calloc(1, CLI_PASSWORD_MAX + 1);
    if (g->password == NULL)
        return cli_usage(NULL, "out of memory reading password file '%s'", q);
    /* "-": standard input itself, not a new open of it, which would start
     * a regular file over from its beginning. */
    if (strcmp(f, "-") == 0)
        fd = dup(STDIN_FILENO);
    else
        fd = open(f, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        saved = errno;
        cli_drop_password(g);
        return cli_usage(NULL, "cannot open password file '%s': %s", q,
                         strerror(saved));
    }
    n = read_line(fd, g->password, CLI_PASSWORD_MAX + 1);
    saved = errno;
    close(fd);
    if (n > 0 && strlen(g->password) == (size_t)n)
        return 0;
    cli_drop_password(g);
    if (n == -1)
        return cli_usage(NULL, "cannot read password file '%s': %s", q,
                         strerror(saved));
    if (n == -2)
        return cli_usage(NULL,
                         "the first line of password file '%s' is longer "
                         "than %d bytes",
                         q, CLI_PASSWORD_MAX);
    if (n == 0)
        return cli_usage(NULL, "the first line of password file '%s' is empty",
                         q);
    return cli_usage(NULL,
                     "password file '%s' has a NUL byte in its first line", q);
}

void cli_drop_password(cli_global *g)
{
    volatile char *p = g->password;
    size_t i;

    if (p == NULL)
        return;
    /* All of the buffer (a refused line may hold bytes past a NUL), and
     * through volatile, so that the wipe is not dropped before free(). */
    for (i = 0; i <= CLI_PASSWORD_MAX; i++)
        p[i] = '\0';
    free(g->password);
    g->password = NULL;
}

void cli_scrub_env(const cli_global *g)
{
    static const char *const vars[] = {"REDISLOCK_URL", "REDIS_URL"};
    size_t i, start, end;
    const char *v;

    unsetenv("REDISCLI_AUTH");
    if (g->nurls > 0)
        return;
    /* The one env_url() took; a lone "name@" may be a password too. */
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        v = getenv(vars[i]);
        if (v == NULL || *v == '\0')
            continue;
        if (secret_span(v, &start, &end))
            unsetenv(vars[i]);
        return;
    }
}

int cli_open(const char *ctx, const cli_global *g, const char *key,
             const cli_cmdopts *o, int64_t cap_ms, redislock_client **c,
             redislock_lock **l)
{
    const void *keys[1 + REDISLOCK_SET_MAX];
    size_t lens[1 + REDISLOCK_SET_MAX];
    redislock_err err;
    int rc, i, n = o != NULL ? o->nkeys : 0;

    *l = NULL;
    if ((rc = cli_connect(ctx, g, cap_ms, o != NULL ? &o->ev : NULL, c)) != 0)
        return rc;
    keys[0] = key;
    lens[0] = strlen(key);
    for (i = 0; i < n; i++) {
        keys[1 + i] = o->keys[i];
        lens[1 + i] = strlen(o->keys[i]);
    }
    err = n > 0 ? redislock_lock_new_multi(*c, keys, lens, (size_t)(1 + n), l)
                : redislock_lock_new(*c, key, strlen(key), l);
    if (err != REDISLOCK_OK) {
        rc = cli_fail(ctx, err, "cannot make a lock handle");
        redislock_client_free(*c);
        *c = NULL;
        return rc;
    }
    return 0;
}

void cli_close(redislock_client *c, redislock_lock *l)
{
    redislock_lock_free(l);
    redislock_client_free(c);
}

void cli_signal_set(sigset_t *set)
{
    static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT,
                               SIGTERM, SIGUSR1, SIGUSR2};
    struct sigaction sa;
    size_t i;

    sigemptyset(set);
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        if (sigaction(sigs[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            continue;
        sigaddset(set, sigs[i]);
    }
}

int64_t cli_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
