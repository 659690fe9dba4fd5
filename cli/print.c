/*
 * Printing a lock's state, for status and list: plain text for people and
 * line-based tools, JSON for programs. Keys, owner ids and metadata come
 * from Redis and may hold any byte, so both forms escape them.
 */
#include "cli.h"

#include <stdio.h>

/* The length of a valid UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned long cp;
    size_t len, i;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, cp = p[0] & 0x1fUL;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, cp = p[0] & 0x0fUL;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, cp = p[0] & 0x07UL;
    else
        return 0;
    if (len > n)
        return 0;
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3fUL);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* Prints n bytes of s as a JSON string. JSON text is UTF-8: a byte that
 * is not part of valid UTF-8 becomes U+FFFD. */
static void json_string(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = p + n;
    size_t len;

    putchar('"');
    while (p < end) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7f) {
            printf("\\u%04x", *p++);
        } else if ((len = utf8_len(p, (size_t)(end - p))) > 0) {
            fwrite(p, 1, len, stdout);
            p += len;
        } else {
            fputs("\\ufffd", stdout);
            p++;
        }
    }
    putchar('"');
}

/* A JSON string, or null for NULL. */
static void json_or_null(const char *s)
{
    size_t n = 0;

    if (s == NULL) {
        fputs("null", stdout);
        return;
    }
    while (s[n] != '\0')
        n++;
    json_string(s, n);
}

/*
 * Prints n bytes of s for a plain line: control bytes and backslash
 * become \xNN, so that one lock is one line and the escapes can be told
 * from the text. With space_too, spaces do as well, so that the line
 * still splits into its fields on spaces.
 */
static void plain_text(const char *s, size_t n, int space_too)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '\\' || (c == ' ' && space_too))
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

static void plain_field(const char *name, const char *s, int space_too)
{
    size_t n = 0;

    while (s[n] != '\0')
        n++;
    printf(" %s=", name);
    plain_text(s, n, space_too);
}

int cli_foreign(const redislock_info *info)
{
    return info->held && info->reserved == REDISLOCK_KIND_NOT_LOCK;
}

/* The hold count when it is known: a lock with an owner id counts its
 * holds; redislock's plain lock has one, which goes without saying, and
 * another library's lock has a count nobody knows. */
static int show_holds(const redislock_info *info)
{
    return info->owner != NULL && info->holds > 0;
}

/* The fields of a held key (or a listed one) after its state word, but
 * for its metadata, which goes last. */
static void plain_fields(const redislock_info *info, int with_key)
{
    size_t i;

    /* A foreign key is held, by an owner with no token redislock reads:
     * its TTL, then its Redis type, which tells a key without expiry
     * (ttl_ms=-1, most likely data) from another tool's lock. */
    if (with_key && cli_foreign(info))
        fputs(" held-foreign", stdout);
    printf(" ttl_ms=%lld", (long long)info->ttl_ms);
    if (cli_foreign(info)) {
        plain_field("type", info->metadata, 1);
        return;
    }
    /* A hold-after reservation: held, by nobody, until it runs out. */
    if (info->reserved == REDISLOCK_KIND_RESERVED)
        fputs(" reserved", stdout);
    /* A semaphore: its live permits of its limit; a lock held shared:
     * its live shares, which are 0 while a waiting exclusive request
     * keeps the key for itself. Then each one's lease, shortest first. */
    if (info->reserved == REDISLOCK_KIND_SEMAPHORE ||
        info->reserved == REDISLOCK_KIND_SHARED) {
        if (info->reserved == REDISLOCK_KIND_SEMAPHORE)
            printf(" permits=%lld limit=%d", (long long)info->holds,
                   info->limit);
        else
            printf(" readers=%lld", (long long)info->holds);
        for (i = 0; i < info->nshare_ttls; i++)
            printf("%s%lld", i == 0 ? " leases_ms=" : ",",
                   (long long)info->share_ttls[i]);
        return;
    }
    if (show_holds(info))
        printf(" holds=%lld", (long long)info->holds);
    if (info->owner != NULL)
        plain_field("owner", info->owner, 1);
    /* Its holder was asked to give it up (revoke): the reason, if any. */
    if (info->revoked != NULL && info->revoked_len == 0)
        fputs(" revoked", stdout);
    else if (info->revoked != NULL)
        plain_field("revoked", info->revoked, 1);
}

/* A fair queue's waiters, one line each after the key's, in queue order:
 * owner=- for a waiter without an owner id (its token is never shown). */
static void plain_waiters(const redislock_info *info)
{
    size_t i;

    for (i = 0; i < info->nwaiters; i++) {
        const redislock_waiter *w = &info->waiters[i];
        printf("waiter %zu owner=", i + 1);
        if (w->owner != NULL)
            plain_text(w->owner, w->owner_len, 1);
        else
            putchar('-');
        printf(" waited_ms=%lld\n", (long long)w->waited_ms);
    }
}

/* status prints a key's line, then its waiters' lines; list (with_key)
 * one line per key, with the count of its waiters only. */
static void print_plain(const char *key, size_t keylen,
                        const redislock_info *info, int with_key)
{
    if (with_key)
        plain_text(key, keylen, 1);
    else if (!info->held)
        fputs("free", stdout);
    else
        fputs(cli_foreign(info) ? "held-foreign" : "held", stdout);
    if (with_key || info->held)
        plain_fields(info, with_key);
    if (info->queued > 0)
        printf(" waiters=%lld", (long long)info->queued);
    /* The last field: its spaces cannot be mistaken for a separator. */
    if (!cli_foreign(info) && info->metadata != NULL)
        plain_field("metadata", info->metadata, 0);
    putchar('\n');
    if (!with_key)
        plain_waiters(info);
}

/* The fields of a semaphore or of a lock held shared, after its TTL:
 * how many hold it now and each one's lease (shortest first). Neither
 * kind has an owner id, metadata or a fencing token in its key. */
static void json_counted(const redislock_info *info)
{
    size_t i;

    if (info->reserved == REDISLOCK_KIND_SEMAPHORE)
        printf(",\"permits\":%lld,\"limit\":%d", (long long)info->holds,
               info->limit);
    else
        printf(",\"readers\":%lld,\"shared\":true", (long long)info->holds);
    fputs(",\"leases_ms\":[", stdout);
    for (i = 0; i < info->nshare_ttls; i++)
        printf("%s%lld", i == 0 ? "" : ",", (long long)info->share_ttls[i]);
    putchar(']');
}

/* The fields of a lock, after its TTL. Another library's lock (no hold
 * count) shows no holds and no fence: redislock issued it none; a plain
 * lock shows no fence either (its key keeps none). */
static void json_lock(const redislock_info *info)
{
    int known = info->holds > 0;

    if (info->reserved == REDISLOCK_KIND_SEMAPHORE ||
        info->reserved == REDISLOCK_KIND_SHARED) {
        json_counted(info);
        return;
    }
    if (known)
        printf(",\"holds\":%lld", (long long)info->holds);
    fputs(",\"owner\":", stdout);
    json_or_null(info->owner);
    fputs(",\"metadata\":", stdout);
    json_or_null(info->metadata);
    if (known && info->fence > 0)
        printf(",\"fence\":%lld", (long long)info->fence);
    printf(",\"reserved\":%s",
           info->reserved == REDISLOCK_KIND_RESERVED ? "true" : "false");
    if (info->revoked != NULL) {
        fputs(",\"revoked\":", stdout);
        json_string(info->revoked, info->revoked_len);
    }
}

/* A fair queue's waiters, when any wait: how many, and the first ones
 * listed in queue order, owner null for a waiter without an owner id. */
static void json_waiters(const redislock_info *info)
{
    size_t i;

    if (info->queued == 0)
        return;
    printf(",\"queued\":%lld,\"waiters\":[", (long long)info->queued);
    for (i = 0; i < info->nwaiters; i++) {
        const redislock_waiter *w = &info->waiters[i];
        fputs(i == 0 ? "{\"owner\":" : ",{\"owner\":", stdout);
        if (w->owner != NULL)
            json_string(w->owner, w->owner_len);
        else
            fputs("null", stdout);
        printf(",\"waited_ms\":%lld}", (long long)w->waited_ms);
    }
    putchar(']');
}

static void print_json(const char *key, size_t keylen,
                       const redislock_info *info)
{
    fputs("{\"key\":", stdout);
    json_string(key, keylen);
    if (!info->held) {
        fputs(",\"held\":false", stdout);
    } else {
        printf(",\"held\":true,\"ttl_ms\":%lld", (long long)info->ttl_ms);
        if (!cli_foreign(info)) {
            json_lock(info);
        } else {
            fputs(",\"foreign\":true,\"type\":", stdout);
            json_string(info->metadata, info->metadata_len);
        }
    }
    json_waiters(info);
    putchar('}');
}

void cli_print_lock(const char *key, size_t keylen, const redislock_info *info,
                    int json, int with_key)
{
    if (json)
        print_json(key, keylen, info);
    else
        print_plain(key, keylen, info, with_key);
}

void cli_print_finding(const redislock_finding *f, int json)
{
    if (json) {
        fputs("{\"server\":", stdout);
        json_or_null(f->server);
        fputs(",\"risk\":", stdout);
        json_or_null(redislock_risk_name(f->risk));
        fputs(",\"what\":", stdout);
        json_or_null(f->what);
        fputs(",\"fix\":", stdout);
        json_or_null(f->fix);
        putchar('}');
        return;
    }
    printf("%s: %s: %s\n  fix: %s\n", f->server, redislock_risk_name(f->risk),
           f->what, f->fix);
}

/* The kinds of change, as printed: redislock_change's order. */
static const char *const change_names[] = {"none",     "elected", "proclaimed",
                                           "resigned", "expired", "gap"};

static void print_leader_json(const redislock_leader_info *s, int change)
{
    if (change)
        printf("{\"change\":\"%s\",\"n\":%lld,",
               change_names[s->kind < 0 || s->kind > 5 ? 0 : s->kind],
               (long long)s->n);
    else
        printf("{\"n\":%lld,", (long long)s->n);
    printf("\"leader\":%s,\"term\":%lld,\"id\":",
           s->has_leader ? "true" : "false", (long long)s->term);
    json_or_null(s->id);
    fputs(",\"value\":", stdout);
    json_or_null(s->value);
    if (!change)
        printf(",\"ttl_ms\":%lld", (long long)s->ttl_ms);
    putchar('}');
}

void cli_print_leader(const redislock_leader_info *s, int json, int change)
{
    if (json) {
        print_leader_json(s, change);
        return;
    }
    if (change)
        printf("%s n=%lld term=%lld",
               change_names[s->kind < 0 || s->kind > 5 ? 0 : s->kind],
               (long long)s->n, (long long)s->term);
    else if (s->has_leader)
        printf("leader term=%lld", (long long)s->term);
    else
        fputs("none", stdout);
    /* A gap is followed by the state now, as the other changes are by
     * what they made. */
    if (s->has_leader && s->id != NULL)
        plain_field("id", s->id, 1);
    if (s->has_leader && s->value != NULL)
        plain_field("value", s->value, 1);
    if (!change && s->has_leader)
        printf(" ttl_ms=%lld", (long long)s->ttl_ms);
    if (change && s->kind == REDISLOCK_CHANGE_GAP && !s->has_leader)
        fputs(" none", stdout);
}
