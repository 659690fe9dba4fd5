#include "duration.h"

#include <stddef.h>
#include <string.h>

/* Fraction digits kept exactly. Units are at most 86,400,000 ms, so nine
 * digits give sub-0.1-ms precision; later digits only decide whether
 * to round up. */
#define FRAC_SCALE 1000000000ULL

typedef struct number {
    uint64_t whole;
    int whole_overflow;
    uint64_t frac; /* the fraction times FRAC_SCALE, truncated */
    int frac_rest; /* a non-zero digit was truncated */
    int ndigits;
} number;

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Scans DIGITS[.DIGITS] from p and returns the first byte after it. */
static const char *scan_number(const char *p, number *n)
{
    uint64_t scale = FRAC_SCALE;

    memset(n, 0, sizeof *n);
    for (; is_digit(*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        n->ndigits++;
        if (n->whole > (UINT64_MAX - d) / 10)
            n->whole_overflow = 1;
        else
            n->whole = n->whole * 10 + d;
    }
    if (*p != '.')
        return p;
    for (p++; is_digit(*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        n->ndigits++;
        if (scale > 1) {
            scale /= 10;
            n->frac += d * scale;
        } else if (d != 0) {
            n->frac_rest = 1;
        }
    }
    return p;
}

/* Milliseconds per unit, or 0 when the n bytes at u are not a unit. The
 * table runs from the largest unit to the smallest; *rank gets the
 * unit's place in it, so that a compound duration can keep the order. */
static uint64_t unit_ms(const char *u, size_t n, int *rank)
{
    static const struct {
        const char *name;
        uint64_t ms;
    } units[] = {
        {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
    };
    size_t i;

    for (i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && strncmp(u, units[i].name, n) == 0) {
            *rank = (int)i;
            return units[i].ms;
        }
    return 0;
}

static int is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* n scaled by unit, rounded up to a whole millisecond, added to *total. */
static cli_dur_err add_part(const number *n, uint64_t unit, uint64_t *total)
{
    uint64_t ms, frac_ms;

    if (n->whole_overflow || n->whole > (uint64_t)INT64_MAX / unit)
        return CLI_DUR_RANGE;
    ms = n->whole * unit;
    frac_ms = n->frac * unit / FRAC_SCALE;
    if (n->frac * unit % FRAC_SCALE != 0 || n->frac_rest)
        frac_ms++;
    if (frac_ms > (uint64_t)INT64_MAX - ms ||
        ms + frac_ms > (uint64_t)INT64_MAX - *total)
        return CLI_DUR_RANGE;
    *total += ms + frac_ms;
    return CLI_DUR_OK;
}

/*
 * NUMBER[UNIT], or parts NUMBER UNIT one after another ("1h30m"), each
 * unit smaller than the one before: a repeated or reversed unit is more
 * likely a typo than a sum anyone meant.
 */
static cli_dur_err parse_unsigned(const char *s, int64_t *out_ms)
{
    const char *p = s, *u;
    uint64_t total = 0, unit;
    int rank, last = -1, parts = 0;
    cli_dur_err e;
    number n;

    do {
        p = scan_number(p, &n);
        if (n.ndigits == 0 || (*p != '\0' && !is_letter(*p)))
            return CLI_DUR_SYNTAX;
        for (u = p; is_letter(*p); p++)
            ;
        if (p == u && parts == 0 && *p == '\0') {
            unit = 1000;
        } else if (p == u) {
            return CLI_DUR_SYNTAX;
        } else if ((unit = unit_ms(u, (size_t)(p - u), &rank)) == 0) {
            return CLI_DUR_UNIT;
        } else if (rank <= last) {
            return CLI_DUR_ORDER;
        }
        last = rank;
        parts++;
        if ((e = add_part(&n, unit, &total)) != CLI_DUR_OK)
            return e;
    } while (*p != '\0');
    *out_ms = (int64_t)total;
    return CLI_DUR_OK;
}

cli_dur_err cli_parse_duration(const char *s, int64_t *out_ms)
{
    int64_t ignored;

    if (s == NULL || *s == '\0')
        return CLI_DUR_EMPTY;
    if (*s != '-')
        return parse_unsigned(s, out_ms);
    /* Name the sign only when the rest is a duration, so that "-abc" is
     * reported as garbage rather than as a negative number. */
    if (parse_unsigned(s + 1, &ignored) == CLI_DUR_SYNTAX)
        return CLI_DUR_SYNTAX;
    return CLI_DUR_NEGATIVE;
}

const char *cli_dur_strerror(cli_dur_err err)
{
    switch (err) {
    case CLI_DUR_OK:
        return "valid";
    case CLI_DUR_EMPTY:
        return "empty duration";
    case CLI_DUR_NEGATIVE:
        return "negative duration";
    case CLI_DUR_SYNTAX:
        return "not a number with an optional unit (ms, s, m, h, d), or "
               "numbers with units (1h30m)";
    case CLI_DUR_UNIT:
        return "unknown unit (use ms, s, m, h or d)";
    case CLI_DUR_ORDER:
        return "units must go from the largest to the smallest, each once "
               "(1h30m, not 30m1h)";
    case CLI_DUR_RANGE:
        return "duration too large";
    }
    return "invalid duration";
}
