/*
 * The doctor: each of a client's servers read for the configurations that
 * lose locks silently (redislock_doctor), and the strict constructors'
 * refusal of them (redislock_options.strict).
 */
#ifndef RL_DOCTOR_H
#define RL_DOCTOR_H

#include "redislock.h"

/* For a client made with strict on: REDISLOCK_OK when its servers that
 * answer show nothing of redislock_doctor()'s list (its clock check
 * aside), else REDISLOCK_ECONFIG naming the first finding, its server
 * and its fix; REDISLOCK_ENOMEM. */
redislock_err rl__doctor_strict(redislock_client *c);

#endif
