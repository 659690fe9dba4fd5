/* Parsing of durations given on the command line ("500ms", "1.5s", "2m",
 * "1h30m").
 * A pure function with no I/O and no globals, so it can be fuzzed alone. */
#ifndef RL_CLI_DURATION_H
#define RL_CLI_DURATION_H

#include <stdint.h>

typedef enum cli_dur_err {
    CLI_DUR_OK = 0,
    CLI_DUR_EMPTY,    /* "" */
    CLI_DUR_NEGATIVE, /* "-1s" */
    CLI_DUR_SYNTAX,   /* "abc", "1..5", "1 s" */
    CLI_DUR_UNIT,     /* "5x", "5sec" */
    CLI_DUR_RANGE,    /* larger than INT64_MAX milliseconds */
    CLI_DUR_ORDER     /* "30m1h", "1m1m": units not from large to small */
} cli_dur_err;

/*
 * Parses s as a non-negative duration and stores it in *out_ms. The form is
 * DIGITS[.DIGITS][UNIT] (".5" and "5." are accepted too), UNIT one of ms, s,
 * m, h, d; no unit means seconds. Several such parts with units add up
 * ("1h30m", "2m30s", "1d12h"), each unit smaller than the one before. A
 * fraction of a millisecond rounds up, so a non-zero duration never becomes
 * zero. *out_ms is untouched on error.
 * s may be NULL (CLI_DUR_EMPTY).
 */
cli_dur_err cli_parse_duration(const char *s, int64_t *out_ms);

/* A static English phrase for err ("not a number", "unknown unit"). */
const char *cli_dur_strerror(cli_dur_err err);

#endif
