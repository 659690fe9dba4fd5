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
