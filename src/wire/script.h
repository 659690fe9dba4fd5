/*
 * Lua scripts, embedded at build time from src/lua with their SHA1. They
 * are called as Redis Functions (FCALL) where the server has them and the
 * user may load them: all of them in one library (rl__script_library),
 * whose shared parts are made once when it loads, not on every call as
 * a script's are. Elsewhere (a server before 7.0, an ACL without FCALL or
 * FUNCTION LOAD) by EVALSHA; a server that lacks one (after a restart or
 * SCRIPT FLUSH) answers NOSCRIPT, and the request layer (request.h) loads
 * it (SCRIPT LOAD, or EVAL where that is refused).
 */
#ifndef RL_SCRIPT_H
#define RL_SCRIPT_H

#include <stddef.h>

#include "conn.h"
#include "keys.h"

typedef struct rl__script {
    const char *name;
    const char *sha1;
    const char *source;
    /* Always sent whole: a rare call that must not spend a round trip on
     * NOSCRIPT (the abandon after a lost reply). */
    int eval_only;
    /* Its KEYS, in order, as keys.h's roles (from the script's rl_keys
     * call); NULL for a script whose caller names its keys itself. */
    const unsigned char *keys;
    int nkeys;
    /* A set's script (rl_keys_each): the roles of the keys it takes for
     * each further lock of the set, after keys; NULL for the others. */
    const unsigned char *each;
    int neach;
    /* Its function in rl__script_library, for FCALL; NULL for those sent
     * whole (eval_only) and in a key-check build. */
    const char *fname;
} rl__script;

/* The scripts as one Functions library, for FUNCTION LOAD ("" in a
 * key-check build). Its name and its functions' carry a hash of its
 * text, so that libraries of other versions live beside it. */
extern const char rl__script_library[];

extern const rl__script rl__script_acquire;
extern const rl__script rl__script_fair;
extern const rl__script rl__script_leave;
extern const rl__script rl__script_abandon;
extern const rl__script rl__script_release;
extern const rl__script rl__script_extend;
extern const rl__script rl__script_renew;
extern const rl__script rl__script_inspect;
extern const rl__script rl__script_fenced_set;
extern const rl__script rl__script_share_acquire;
extern const rl__script rl__script_share_fair;
extern const rl__script rl__script_set_acquire;
extern const rl__script rl__script_set_take;
extern const rl__script rl__script_set_release;
extern const rl__script rl__script_set_free;
extern const rl__script rl__script_set_extend;
extern const rl__script rl__script_set_fence;
extern const rl__script rl__script_set_abandon;
extern const rl__script rl__script_set_pass;
extern const rl__script rl__script_revoke;
extern const rl__script rl__script_sequencer;
extern const rl__script rl__script_seqcheck;
extern const rl__script rl__script_elect;
/* Every script above, NULL-terminated. */
extern const rl__script *const rl__scripts[];

/* The most keys and arguments one script request carries (a renewal of
 * many locks by node, renew.lua's, has five words per lock). */
#define RL_SCRIPT_MAX_ARGS 65536

/* How a request calls its script. */
typedef enum rl__script_via {
    RL_VIA_FCALL,   /* FCALL of its function */
    RL_VIA_EVALSHA, /* EVALSHA of its SHA1 */
    RL_VIA_EVAL     /* EVAL of its text */
} rl__script_via;

/* Fills argv/argl (3 + nkeys + nargs slots) with the call of s by via;
 * nk holds the key count's text. Returns argc, or -1 for too many
 * arguments (more than RL_SCRIPT_MAX_ARGS). The request layer (request.c) is
 * its user. */
int rl__script_argv(const rl__script *s, rl__script_via via, int nkeys,
                    const char *const *keys, const size_t *klens, int nargs,
                    const char *const *args, const size_t *lens, char nk[8],
                    const char **argv, size_t *argl);

/* Whether r is the NOSCRIPT error: the server lacks the script. */
int rl__script_is_noscript(const rl__reply *r);

/* What r, the reply to an FCALL, says of Functions on that server:
 * RL_FN_MISSING when the library is not loaded there ("Function not
 * found": FUNCTION LOAD, then FCALL again), RL_FN_REFUSED when FCALL
 * itself cannot be used (a server before 7.0, an ACL without it: EVALSHA
 * from then on), else RL_FN_RAN (the function ran, or the server refused
 * it for what would refuse any script: a replica, LOADING, OOM, a key
 * outside the ACL). In each case but RL_FN_RAN nothing ran. */
enum { RL_FN_RAN, RL_FN_MISSING, RL_FN_REFUSED };
int rl__script_fn_reply(const rl__reply *r);

#endif
