#include "abi.h"

#include <string.h>

#include "error.h"

/* A struct this large is no struct of ours but a caller's mistake: a
 * length or a count passed for the size. */
#define RL_ABI_SIZE_MAX 65536

/* The size macros must name each struct's last field: only padding may
 * follow it. A field appended without moving the macro fails here, unless
 * it fits in that padding; then the test of the new field fails, since
 * the library would never copy it. */
#define RL_ENDS_AT(type, size)                                                 \
    _Static_assert(sizeof(type) - (size) < _Alignof(type),                     \
                   #size " must name the last field of " #type)
RL_ENDS_AT(redislock_options, REDISLOCK_OPTIONS_SIZE);
RL_ENDS_AT(redislock_acquire_options, REDISLOCK_ACQUIRE_OPTIONS_SIZE);
RL_ENDS_AT(redislock_info, REDISLOCK_INFO_SIZE);
RL_ENDS_AT(redislock_leader_info, REDISLOCK_LEADER_INFO_SIZE);

redislock_err rl__abi_check(size_t size, size_t min, const char *what)
{
    if (size >= min && size <= RL_ABI_SIZE_MAX)
        return REDISLOCK_OK;
    return rl__err(REDISLOCK_EINVAL,
                   "%s of %zu bytes: no version of it has that size (pass "
                   "the header's size macro)",
                   what, size);
}

const void *rl__abi_in(void *local, size_t localsize, const void *in,
                       size_t size)
{
    if (in == NULL)
        return NULL;
    memset(local, 0, localsize);
    memcpy(local, in, size < localsize ? size : localsize);
    return local;
}

void rl__abi_out(void *out, size_t size, const void *local, size_t localsize)
{
    memcpy(out, local, size < localsize ? size : localsize);
    if (size > localsize)
        memset((char *)out + localsize, 0, size - localsize);
}

redislock_err rl__abi_acquire_options(redislock_acquire_options *o,
                                      const redislock_acquire_options *in,
                                      size_t size)
{
    redislock_err err;

    memset(o, 0, sizeof *o);
    if (in == NULL)
        return REDISLOCK_OK;
    if ((err = rl__abi_check(size, RL_ACQUIRE_OPTIONS_SIZE_0_1,
                             "redislock_acquire_options")) != REDISLOCK_OK)
        return err;
    rl__abi_in(o, sizeof *o, in, size);
    return REDISLOCK_OK;
}
