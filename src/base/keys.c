#include "keys.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What separates a lock key's part of a helper name from the suffix. */
#define RL_HELPER_MARK ":rl-"

static uint16_t crc16(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    size_t i;
    int b;

    /* CRC16-XMODEM (polynomial 0x1021, no reflection, initial 0), the
     * variant the Redis Cluster specification names. */
    for (i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021)
                                 : (uint16_t)(crc << 1);
    }
    return crc;
}

int rl__hash_tag(const void *key, size_t len, size_t *off, size_t *taglen)
{
    const unsigned char *k = key, *open = memchr(k, '{', len), *close;

    if (open == NULL)
        return 0;
    close = memchr(open + 1, '}', len - (size_t)(open + 1 - k));
    if (close == NULL || close == open + 1)
        return 0;
    *off = (size_t)(open + 1 - k);
    *taglen = (size_t)(close - open - 1);
    return 1;
}

unsigned rl__key_slot(const void *key, size_t len)
{
    size_t off = 0;

    if (rl__hash_tag(key, len, &off, &len) == 0)
        off = 0;
    return crc16((const unsigned char *)key + off, len) &
           (RL_CLUSTER_SLOTS - 1);
}

char *rl__helper_name(const void *key, size_t len, const char *suffix,
                      size_t *outlen)
{
    size_t slen = strlen(suffix), off, tlen;
    int tagged = rl__hash_tag(key, len, &off, &tlen);
    char *b = malloc(2 * len + sizeof RL_HELPER_MARK + slen + 2), *p = b;

    if (b == NULL)
        return NULL;
    memcpy(p, key, len);
    p += len;
    if (!tagged) {
        *p++ = '{';
        memcpy(p, key, len);
        p += len;
        *p++ = '}';
    }
    memcpy(p, RL_HELPER_MARK, sizeof RL_HELPER_MARK - 1);
    p += sizeof RL_HELPER_MARK - 1;
    memcpy(p, suffix, slen);
    p += slen;
    *outlen = (size_t)(p - b);
    return b;
}

char *rl__helper_join(const char *base, size_t baselen, const char *suffix,
                      const char *token, size_t *outlen)
{
    size_t s = strlen(suffix), t = token ? strlen(token) : 0;
    char *name = malloc(baselen + s + t + 1);

    if (name == NULL)
        return NULL;
    memcpy(name, base, baselen);
    memcpy(name + baselen, suffix, s);
    if (t > 0)
        memcpy(name + baselen + s, token, t);
    *outlen = baselen + s + t;
    name[*outlen] = '\0';
    return name;
}

/* The helper suffix of each RL_KEY_* role (none for the lock). */
static const char *const role_suffix[RL_KEY_ROLES] = {
    NULL, "fence", "waiting", "wake", "rwake", "q", "ws", "seq", "void:"};

/* The bytes the names of n roles of layout take for lock k. */
static size_t names_size(const unsigned char *layout, int n,
                         const rl__lockname *k, size_t rlen)
{
    size_t need = 0;
    int i;

    for (i = 0; i < n; i++)
        if (layout[i] != RL_KEY_LOCK)
            need += k->baselen + strlen(role_suffix[layout[i]]) +
                    (layout[i] == RL_KEY_VOID ? rlen : 0);
    return need;
}

/* Appends the n keys of layout for lock k to ks, their names written at
 * ks->buf + *at. */
static void add_names(rl__keyset *ks, size_t *at, const unsigned char *layout,
                      int n, const rl__lockname *k, const char *req,
                      size_t rlen)
{
    int i, j;

    for (i = 0; i < n; i++) {
        const char *sfx = role_suffix[layout[i]];
        size_t s;

        j = ks->n++;
        if (layout[i] == RL_KEY_LOCK) {
            ks->k[j] = k->key;
            ks->len[j] = k->keylen;
            continue;
        }
        s = strlen(sfx);
        ks->k[j] = ks->buf + *at;
        memcpy(ks->buf + *at, k->base, k->baselen);
        memcpy(ks->buf + *at + k->baselen, sfx, s);
        ks->len[j] = k->baselen + s;
        if (layout[i] == RL_KEY_VOID) {
            memcpy(ks->buf + *at + ks->len[j], req, rlen);
            ks->len[j] += rlen;
        }
        *at += ks->len[j];
    }
}

/* Whether layout's n roles are roles, with a void key only where allowed
 * and then with a request to name it after. */
static int layout_ok(const unsigned char *layout, int n, int void_ok,
                     const char *req)
{
    int i;

    for (i = 0; i < n; i++)
        if (layout[i] >= RL_KEY_ROLES ||
            (layout[i] == RL_KEY_VOID && (!void_ok || !req)))
            return 0;
    return 1;
}

int rl__keyset_make_set(rl__keyset *ks, const unsigned char *layout, int n,
                        const unsigned char *each, int neach,
                        const rl__lockname *k, const rl__lockname *more,
                        int nmore, const char *req)
{
    size_t need, at = 0, rlen = req ? strlen(req) : 0;
    int i;

    ks->n = 0;
    ks->buf = NULL;
    if (n > RL_KEYS_LAYOUT_MAX || neach > RL_KEYS_LAYOUT_MAX || nmore < 0 ||
        n + (long)neach * nmore > RL_KEYS_MAX ||
        !layout_ok(layout, n, 1, req) ||
        (nmore > 0 && !layout_ok(each, neach, 0, req)))
        return -1;
    need = names_size(layout, n, k, rlen);
    for (i = 0; i < nmore; i++)
        need += names_size(each, neach, &more[i], 0);
    if (need > 0 && (ks->buf = malloc(need)) == NULL)
        return -1;
    add_names(ks, &at, layout, n, k, req, rlen);
    for (i = 0; i < nmore; i++)
        add_names(ks, &at, each, neach, &more[i], NULL, 0);
    return 0;
}

int rl__keyset_make(rl__keyset *ks, const unsigned char *layout, int n,
                    const rl__lockname *k, const char *req)
{
    return rl__keyset_make_set(ks, layout, n, NULL, 0, k, NULL, 0, req);
}

void rl__keyset_free(rl__keyset *ks)
{
    free(ks->buf);
    ks->buf = NULL;
    ks->n = 0;
}

/* Whether suffix names one of the helper keys the library makes: the
 * roles' names and "fenced" (redislock_fenced_set). */
static int helper_suffix(const char *s, size_t n)
{
    size_t i, k;

    if (n == 6 && memcmp(s, "fenced", 6) == 0)
        return 1;
    for (i = 1; i < RL_KEY_ROLES; i++) {
        k = strlen(role_suffix[i]);
        if (role_suffix[i][k - 1] == ':'
                ? n > k && memcmp(s, role_suffix[i], k) == 0
                : k == n && memcmp(s, role_suffix[i], n) == 0)
            return 1;
    }
    return 0;
}

int rl__is_helper_key(const char *k, size_t len)
{
    const size_t m = sizeof RL_HELPER_MARK - 1;
    const char *at = NULL, *p;
    size_t off, tlen;

    /* The last mark separates the lock key's part from the suffix. */
    for (p = k; p + m <= k + len; p++)
        if (memcmp(p, RL_HELPER_MARK, m) == 0)
            at = p;
    if (at == NULL || !helper_suffix(at + m, len - (size_t)(at + m - k)))
        return 0;
    /* Both forms, "X{X}" and a key with a tag of its own, have a tag. */
    return rl__hash_tag(k, (size_t)(at - k), &off, &tlen);
}

size_t rl__lockname_size(const rl__lockname *names, int n)
{
    size_t size = 0;
    int i;

    for (i = 0; i < n; i++)
        size += names[i].keylen + names[i].baselen;
    return size;
}

char *rl__lockname_copy(rl__lockname *to, const rl__lockname *names, int n,
                        char *at)
{
    int i;

    for (i = 0; i < n; i++) {
        to[i].key = memcpy(at, names[i].key, names[i].keylen);
        to[i].keylen = names[i].keylen;
        at += names[i].keylen;
        to[i].base = memcpy(at, names[i].base, names[i].baselen);
        to[i].baselen = names[i].baselen;
        at += names[i].baselen;
    }
    return at;
}
