/*
 * A blackholed server for tests and the Redlock benchmark: a TCP port on
 * loopback that never completes a connect. No test framework in here, so
 * that bench/redlock.sh can build it too.
 */
#ifndef TH_BLACKHOLE_H
#define TH_BLACKHOLE_H

/* A listener with a backlog of one, filled by *filler and never accepted,
 * so that the kernel drops further SYNs, as a blackholed server's network
 * does. Returns the listener (its port in *port), or -1. Close both. */
int th_blackhole(int *port, int *filler);

#endif
