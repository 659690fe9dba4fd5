/*
 * libFuzzer target for the CLI's duration parser (cli/duration.c), given
 * a NUL-terminated copy of the input. It checks the documented contract:
 * the result is never negative, a duration with a non-zero digit never
 * becomes 0, *out_ms is untouched on error, and whole numbers with a unit
 * scale exactly (compound durations such as "1h30m" are only held to the
 * first three).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define UNTOUCHED INT64_C(-12345)

/* The value of "DIGITS UNIT" when the number is small enough to compute
 * here without overflow, else -1. */
static int64_t simple_value(const char *s)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1},         {"s", 1000}, {"m", 60000},
                 {"h", 3600000},    {"", 1000},  {"d", 86400000}};
    size_t n = strspn(s, "0123456789"), i;
    int64_t v = 0;

    if (n == 0 || n > 12)
        return -1;
    for (i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    for (i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(s + n, units[i].unit) == 0)
            return v * units[i].ms;
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    int64_t ms = UNTOUCHED, want;
    cli_dur_err err;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    err = cli_parse_duration(s, &ms);
    if (cli_dur_strerror(err) == NULL)
        abort();
    if (err != CLI_DUR_OK && ms != UNTOUCHED)
        abort();
    if (err == CLI_DUR_OK) {
        if (ms < 0)
            abort();
        if (ms == 0 && strpbrk(s, "123456789") != NULL)
            abort();
        want = simple_value(s);
        if (want >= 0 && ms != want)
            abort();
    }
    free(s);
    return 0;
}
