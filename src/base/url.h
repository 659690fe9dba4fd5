/* Parsing of the connection URLs the client accepts. Pure: no I/O. */
#ifndef RL_URL_H
#define RL_URL_H

#include "redislock.h"

typedef struct rl__url {
    char *host; /* TCP host (brackets of an IPv6 literal removed), or NULL */
    int port;   /* TCP port, 1..65535 */
    char *path; /* unix socket path, or NULL */
    char *user; /* ACL user, or NULL */
    char *password; /* NULL when the URL has none */
    int db;         /* SELECT index; 0 needs no SELECT */
    int tls;        /* rediss:// */
    /* From the query (?connect_timeout=, ?timeout=...); 0: not given. */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    /* rediss:// only, from the query (?tls_ca_file=...), decoded; NULL:
     * not given. The client's options of the same names win. */
    char *tls_ca_file;
    char *tls_ca_dir; /* a directory of CA certificates (c_rehash) */
    char *tls_cert_file;
    char *tls_key_file;
    char *tls_server_name;
    int tls_insecure; /* ?tls_insecure=1: the server is not verified */
} rl__url;

/* The longest timeout a URL may set: one day. */
#define RL_URL_TIMEOUT_MAX_MS (24LL * 3600 * 1000)

/* Parses s into u (which the caller frees with rl__url_free even on
 * failure). Returns REDISLOCK_EINVAL with a detail naming the problem, or
 * REDISLOCK_ENOTLS for rediss://. */
redislock_err rl__url_parse(const char *s, rl__url *u);

void rl__url_free(rl__url *u);

/* Whether s is a Sentinel URL (redis+sentinel:// or rediss+sentinel://). */
int rl__url_is_sentinel(const char *s);

/*
 * A Sentinel URL split into the URLs it stands for:
 * redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/name[/db][?query]
 * (rediss+sentinel:// for TLS to the sentinels and the nodes). The user
 * and password are the data nodes'; the query's sentinel_user and
 * sentinel_password are the sentinels' own; its other parameters
 * (timeouts) go to both. A sentinel's port defaults to 26379.
 */
typedef struct rl__sentinel_url {
    char *name;       /* the master's name, decoded */
    char **sentinels; /* each sentinel's URL, as rl__url_parse takes it */
    size_t n;
    /* A node's URL is node_pre, "host:port", node_post. */
    char *node_pre;
    char *node_post;
} rl__sentinel_url;

/* The most sentinels a URL names. */
#define RL_SENTINELS_MAX 16

/* Parses s into u (free it with rl__sentinel_url_free even on failure);
 * REDISLOCK_EINVAL with a detail naming the problem. */
redislock_err rl__sentinel_url_parse(const char *s, rl__sentinel_url *u);
void rl__sentinel_url_free(rl__sentinel_url *u);

#endif
