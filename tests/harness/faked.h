/*
 * This runner again, in a child, running one test under libfaketime: a
 * process whose clocks lie, against real servers (redis-server itself
 * cannot run under libfaketime here: jemalloc's start-up recurses into
 * its clock_gettime).
 */
#ifndef TH_FAKED_H
#define TH_FAKED_H

#include <stddef.h>
#include <sys/types.h>

#define TH_FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

/* Starts "rl-tests -v test" in a child with libfaketime preloaded (ASan
 * told it need not come first) and env's "NAME=VALUE" strings (NULL-ended)
 * set; its output goes to the pipe whose reading end is *out. Fails the
 * test when libfaketime is missing. Returns the child's pid. */
pid_t th_faked_start(const char *test, const char *const *env, int *out);

/* Reads the child's output into buf (len bytes, NUL-ended), waits for it
 * and fails the test unless it exited 0 having passed its one test.
 * Returns buf. */
char *th_faked_finish(pid_t pid, int out, char *buf, size_t len);

#endif
