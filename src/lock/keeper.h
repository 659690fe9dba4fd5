/*
 * The keeper: one thread per client, made on first use, that runs a
 * private loop (ploop.h) of its own for what outlives a blocking call:
 * the renewals of the locks it acquired with the watchdog, and the sweeps
 * of lost or given-back attempts its loop had not finished. A call hands
 * them over as messages (an inbox and a wake-up of the loop); the engine
 * (alock.c) renews and sweeps there as on any loop, many locks on one
 * connection per server. A lock handed over waits, pending, until its
 * first renewal is nearly due, and the thread is woken only when it
 * would look at its pending locks too late. Release and extend of a kept
 * lock run on the caller's own loop; the release of a pending lock drops
 * it (no wake-up, no wait); of one the keeper renews, it first asks the
 * keeper to stop renewing and waits until it has (and until a renewal
 * out has been answered), so that no renewal is sent after a release.
 */
#ifndef RL_KEEPER_H
#define RL_KEEPER_H

#include "alock.h"
#include "redislock.h"

typedef struct rl__keeper rl__keeper;

/* Fills h with the keeper of c as where a loop of c's sends what
 * outlives it (rl__alock_hand_to): the thread starts with the first lock
 * or sweep handed over. */
void rl__keeper_hand(redislock_client *c, rl__alock_hand *h);

/* Stops the renewals, gives the sweeps under way up to one connect and
 * one command timeout of their slowest server to finish, then joins the
 * thread and frees it. NULL is a no-op. After every loop of the client
 * has been freed (each hands its sweeps over). */
void rl__keeper_free(rl__keeper *k);

#endif
