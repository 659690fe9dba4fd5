/*
 * lua: what the embedded scripts carry (no server). Each script is sent
 * with the parts of lib.lua it uses and no others (lua_prune.cmake):
 * Redis runs a script's whole text on every call, so a function defined
 * and never called costs every call a closure.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "script.h"
#include "test.h"

/* s with every comment ("--" to the end of its line) blanked out. */
static char *code_of(const char *s)
{
    char *c = strdup(s), *p = c;

    ASSERT(c != NULL);
    while ((p = strstr(p, "--")) != NULL)
        while (*p != '\0' && *p != '\n')
            *p++ = ' ';
    return c;
}

static int word_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* How many times name occurs in code as a whole word. */
static int uses(const char *code, const char *name)
{
    size_t n = strlen(name);
    const char *p = code;
    int k = 0;

    while ((p = strstr(p, name)) != NULL) {
        if ((p == code || !word_char(p[-1])) && !word_char(p[n]))
            k++;
        p += n;
    }
    return k;
}

/* Every local function a script defines is called in it: its name
 * occurs beyond its definition. Returns how many it defines. */
static int check_script(const rl__script *s)
{
    char *code = code_of(s->source), name[64];
    const char *p = code;
    int defined = 0;

    while ((p = strstr(p, "local function ")) != NULL) {
        size_t n = 0;

        p += strlen("local function ");
        while (word_char(p[n]) && n + 1 < sizeof name) {
            name[n] = p[n];
            n++;
        }
        name[n] = '\0';
        defined++;
        if (uses(code, name) < 2)
            test_fail_(__FILE__, __LINE__,
                       "%s.lua carries %s, which it never calls", s->name,
                       name);
    }
    /* rl_keys is written out as a table at build time. */
    ASSERT_EQ_INT(uses(code, "rl_keys"), 0);
    free(code);
    return defined;
}

void test_lua_scripts_carry_only_what_they_call(void)
{
    const rl__script *const *s = rl__scripts;
    size_t i;

    for (i = 0; s[i] != NULL; i++)
        test_log("%s: %d local functions, %zu bytes", s[i]->name,
                 check_script(s[i]), strlen(s[i]->source));
    /* What the pruning must keep: release hands off (rl_handoff), and
     * what rl_handoff calls comes with it. */
    ASSERT(strstr(rl__script_release.source, "local function rl_handoff") !=
           NULL);
    ASSERT(strstr(rl__script_release.source, "local function rl_waiter(") !=
           NULL);
    ASSERT(strstr(rl__script_extend.source, "local function rl_handoff") ==
           NULL);
}

/* Whether table (lua_keycheck.lua's text) has an entry "NAME = {". */
static int keycheck_knows(const char *table, const char *name)
{
    char entry[80];

    snprintf(entry, sizeof entry, " %s = {", name);
    return strstr(table, entry) != NULL;
}

/* Every command a script runs by name is in the key check's table
 * (src/lua_keycheck.lua): a command the table does not know fails the
 * script in check-declared-keys.sh --strict, which runs only in CI. */
void test_lua_keycheck_knows_every_command(void)
{
    static const char *const calls[] = {"redis.call('", "redis.pcall('"};
    const rl__script *const *s = rl__scripts;
    char *table = NULL;
    size_t i, c, len = 0;
    int seen = 0;
    FILE *f = fopen(RL_SOURCE_DIR "/src/lua_keycheck.lua", "r");

    ASSERT(f != NULL);
    table = calloc(1, 1 << 16);
    ASSERT(table != NULL);
    len = fread(table, 1, (1 << 16) - 1, f);
    fclose(f);
    ASSERT(len > 0 && len < (1 << 16) - 1);
    for (i = 0; s[i] != NULL; i++) {
        char *code = code_of(s[i]->source);

        for (c = 0; c < 2; c++) {
            const char *p = code;

            while ((p = strstr(p, calls[c])) != NULL) {
                char name[64];
                size_t n = 0;

                p += strlen(calls[c]);
                while (isalpha((unsigned char)p[n]) && n + 1 < sizeof name) {
                    name[n] = (char)toupper((unsigned char)p[n]);
                    n++;
                }
                name[n] = '\0';
                seen++;
                if (!keycheck_knows(table, name))
                    test_fail_(__FILE__, __LINE__,
                               "%s.lua runs %s, which lua_keycheck.lua's "
                               "table does not list: add its key positions",
                               s[i]->name, name);
            }
        }
        free(code);
    }
    /* The scripts run commands by name: a scan that found none is
     * broken, not clean. */
    ASSERT(seen > 50);
    free(table);
}
