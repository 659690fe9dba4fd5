/* Structs the caller allocates, of any version of the header: see "ABI"
 * in redislock.h. The library works on its own full-size copy. */
#ifndef RL_ABI_H
#define RL_ABI_H

#include <stddef.h>

#include "redislock.h"

/* The sizes of the structs as the 0.1 header laid them out, which the
 * exported functions of the plain names take. Fixed forever: a field
 * added later never changes them. Also the least size a _sized function
 * accepts. */
#define RL_OPTIONS_SIZE_0_1                                                    \
    REDISLOCK_SIZE_THROUGH_(redislock_options, wait_replicas_lenient)
#define RL_ACQUIRE_OPTIONS_SIZE_0_1                                            \
    REDISLOCK_SIZE_THROUGH_(redislock_acquire_options, fair)
#define RL_INFO_SIZE_0_1 REDISLOCK_SIZE_THROUGH_(redislock_info, metadata_len)
/* redislock_leader_info's first size (it came after 0.1). */
#define RL_LEADER_INFO_SIZE_1                                                  \
    REDISLOCK_SIZE_THROUGH_(redislock_leader_info, value_len)

/* REDISLOCK_OK when size bytes may be a struct named what of some version
 * (at least min, its 0.1 size, and not absurdly large); otherwise
 * REDISLOCK_EINVAL with the detail set. */
redislock_err rl__abi_check(size_t size, size_t min, const char *what);

/* An input struct: the caller's first size bytes of *in copied into
 * *local (localsize bytes, the library's struct), the rest of *local
 * zeroed. Returns local, or NULL when in is NULL. */
const void *rl__abi_in(void *local, size_t localsize, const void *in,
                       size_t size);

/* The caller's acquire options in (size bytes, NULL for defaults), as
 * the library's full-size *o; REDISLOCK_EINVAL for a size no version
 * has. */
redislock_err rl__abi_acquire_options(redislock_acquire_options *o,
                                      const redislock_acquire_options *in,
                                      size_t size);

/* An output struct: the library's struct *local (through its last field,
 * localsize bytes) copied to the caller's *out of size bytes; when the
 * caller's is the larger, the bytes the library knows nothing of are
 * zeroed. */
void rl__abi_out(void *out, size_t size, const void *local, size_t localsize);

#endif
