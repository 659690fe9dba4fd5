#include "cli.h"

#include <string.h>

/* Option parsing by hand rather than getopt(3): getopt's reordering, its
 * own messages and the reset of optind between subcommands all differ
 * between libcs, and long options are not POSIX. */

static const cli_optdef *find_long(const cli_optdef *defs, const char *name,
                                   size_t len)
{
    for (; defs->id != 0; defs++)
        if (defs->longname != NULL && strlen(defs->longname) == len &&
            strncmp(defs->longname, name, len) == 0)
            return defs;
    return NULL;
}

static const cli_optdef *find_short(const cli_optdef *defs, int c)
{
    for (; defs->id != 0; defs++)
        if (defs->id < 256 && defs->id == c)
            return defs;
    return NULL;
}

/* How much of an option name to quote in a message: up to the first
 * control byte, at most 40 bytes. */
static int shown_len(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < len && i < 40; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            break;
    return (int)i;
}

static int long_opt(cli_args *a, const cli_optdef *defs, const char **val)
{
    const char *name = a->argv[a->i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
    const cli_optdef *d = find_long(defs, name, len);
    int shown = shown_len(name, len);

    a->i++;
    if (d == NULL) {
        cli_usage(a->ctx, "unknown option '--%.*s'", shown, name);
        return -1;
    }
    if (!d->has_arg) {
        if (eq == NULL)
            return d->id;
        cli_usage(a->ctx, "option '--%s' takes no value", d->longname);
        return -1;
    }
    if (eq != NULL) {
        *val = eq + 1;
        return d->id;
    }
    if (a->i >= a->argc) {
        cli_usage(a->ctx, "option '--%s' needs a value", d->longname);
        return -1;
    }
    *val = a->argv[a->i++];
    return d->id;
}

static int short_opt(cli_args *a, const cli_optdef *defs, const char **val)
{
    const char *arg = a->argv[a->i];
    int c = (unsigned char)arg[a->pos++];
    const char *rest = arg + a->pos;
    const cli_optdef *d = find_short(defs, c);

    if (*rest == '\0' || d == NULL || d->has_arg) {
        a->i++;
        a->pos = 0;
    }
    if (d == NULL) {
        if (c < 0x20 || c >= 0x7f)
            cli_usage(a->ctx, "unknown option byte 0x%02x", c);
        else
            cli_usage(a->ctx, "unknown option '-%c'", c);
        return -1;
    }
    if (!d->has_arg)
        return d->id;
    if (*rest != '\0') {
        *val = rest;
        return d->id;
    }
    if (a->i >= a->argc) {
        cli_usage(a->ctx, "option '-%c' needs a value", c);
        return -1;
    }
    *val = a->argv[a->i++];
    return d->id;
}

int cli_getopt(cli_args *a, const cli_optdef *defs, const char **val)
{
    const char *arg;

    *val = NULL;
    if (a->pos == 0) {
        if (a->i >= a->argc)
            return 0;
        arg = a->argv[a->i];
        /* "-" alone is an operand, as in most tools. */
        if (arg[0] != '-' || arg[1] == '\0')
            return 0;
        if (strcmp(arg, "--") == 0) {
            a->i++;
            return 0;
        }
        if (arg[1] == '-')
            return long_opt(a, defs, val);
        a->pos = 1;
    }
    return short_opt(a, defs, val);
}
