#include "keys.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What separates a lock key's part of a helper name from the suffix. */
#define RL_HELPER_MARK ":rl-"

/* The shared fencing counter's name after the prefix (rl__fence_name). */
#define RL_FENCE_NAME "redislock" RL_HELPER_MARK "fence"

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

/* A short hash tag for each cluster slot: slot_tag[s] hashes to s. Every
 * slot has one of at most 4 characters of [0-9a-z] (the first 60,822
 * such strings, in order of length, cover all 16384). */
static char slot_tag[RL_CLUSTER_SLOTS][5];
static pthread_once_t slot_tags_once = PTHREAD_ONCE_INIT;

static void make_slot_tags(void)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned left = RL_CLUSTER_SLOTS, s;
    unsigned long n, end, v;
    char t[5];
    int len, i;

    for (len = 1, end = 36; len <= 4 && left > 0; len++, end *= 36)
        for (n = 0; n < end && left > 0; n++) {
            for (i = len - 1, v = n; i >= 0; i--, v /= 36)
                t[i] = digits[v % 36];
            t[len] = '\0';
            s = rl__key_slot(t, (size_t)len);
            if (slot_tag[s][0] == '\0') {
                memcpy(slot_tag[s], t, (size_t)len + 1);
                left--;
            }
        }
}

const char *rl__slot_tag(unsigned slot)
{
    pthread_once(&slot_tags_once, make_slot_tags);
    return slot_tag[slot & (RL_CLUSTER_SLOTS - 1)];
}

char *rl__fence_name(const char *key, size_t keylen, const char *base,
                     size_t baselen, int cluster, size_t *outlen)
{
    const char *tag = cluster ? rl__slot_tag(rl__key_slot(key, keylen)) : "";
    size_t n = sizeof RL_FENCE_NAME - 1, t = strlen(tag), dir = keylen;
    char *name, *p;

    /* The key's part up to its last ':' (none without one). */
    while (dir > 0 && key[dir - 1] != ':')
        dir--;
    if ((name = p = malloc(dir + n + t + 3)) == NULL)
        return NULL;
    memcpy(p, key, dir);
    memcpy(p += dir, RL_FENCE_NAME, n);
    p += n;
    if (t > 0) {
        *p++ = '{';
        memcpy(p, tag, t);
        p += t;
        *p++ = '}';
    }
    *outlen = (size_t)(p - name);
    /* A key whose braces open a tag before its last ':' that closes
     * after it hashes elsewhere: the lock's own counter then. */
    if (cluster && rl__key_slot(name, *outlen) != rl__key_slot(key, keylen)) {
        free(name);
        return rl__helper_join(base, baselen, "fence", NULL, outlen);
    }
    name[*outlen] = '\0';
    return name;
}

/* The helper suffix of each RL_KEY_* role (none for the lock). */
static const char *const role_suffix[RL_KEY_ROLES] = {
    NULL, "fence", "waiting", "wake",  "rwake",
    "q",  "ws",    "seq",     "void:", "elect"};

/* The bytes the names of n roles of layout take for lock k. */
static size_t names_size(const unsigned char *layout, int n,
                         const rl__lockname *k, size_t rlen)
{
    size_t need = 0;
    int i;

    for (i = 0; i < n; i++)
        if (layout[i] != RL_KEY_LOCK && layout[i] != RL_KEY_FENCE)
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
        if (layout[i] == RL_KEY_LOCK || layout[i] == RL_KEY_FENCE) {
            ks->k[j] = layout[i] == RL_KEY_LOCK ? k->key : k->fence;
            ks->len[j] = layout[i] == RL_KEY_LOCK ? k->keylen : k->fencelen;
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

/* Whether k names every key of layout's n roles: a fencing counter is
 * named by whoever named the lock (rl__fence_name), not derived here. */
static int named(const unsigned char *layout, int n, const rl__lockname *k)
{
    int i;

    for (i = 0; i < n; i++)
        if (layout[i] == RL_KEY_FENCE && k->fence == NULL)
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
        (nmore > 0 && !layout_ok(each, neach, 0, req)) || !named(layout, n, k))
        return -1;
    for (i = 0; i < nmore; i++)
        if (!named(each, neach, &more[i]))
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

/* Whether k (len bytes, its last helper mark at at) names a shared
 * fencing counter (rl__fence_name): "redislock:rl-fence" at the start or
 * after a ':', in a cluster followed by a tag. */
static int fence_counter(const char *k, size_t len, const char *at)
{
    const size_t n = sizeof RL_FENCE_NAME - 1, m = sizeof "redislock" - 1;
    const char *end = k + len;

    if (at == NULL || (size_t)(at - k) < m || (size_t)(end - (at - m)) < n ||
        memcmp(at - m, RL_FENCE_NAME, n) != 0 ||
        (at - m > k && at[-(ptrdiff_t)m - 1] != ':'))
        return 0;
    at += n - m;
    return at == end || (end - at >= 3 && at[0] == '{' && end[-1] == '}' &&
                         memchr(at + 1, '}', (size_t)(end - at - 2)) == NULL);
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
    if (fence_counter(k, len, at))
        return 1;
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
        size += names[i].keylen + names[i].baselen + names[i].fencelen;
    return size;
}

int rl__lockname_fence_is(const rl__lockname *names, int n, const char *fence,
                          size_t fencelen)
{
    int i;

    for (i = 0; i < n; i++)
        if (names[i].fencelen != fencelen ||
            memcmp(names[i].fence, fence, fencelen) != 0)
            return 0;
    return 1;
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
        to[i].fence = names[i].fence == NULL
                          ? NULL
                          : memcpy(at, names[i].fence, names[i].fencelen);
        to[i].fencelen = names[i].fencelen;
        at += names[i].fencelen;
    }
    return at;
}
