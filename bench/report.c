/*
 * lockbench output: the markdown table (also written to results.md), the
 * hand-off CDF plot through gnuplot, the targets with PASS/MISS, and the
 * machine-readable last line.
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static const char *yes(int pass)
{
    return pass ? "PASS" : "MISS";
}

static void row_micro(FILE *f, const char *name, double ops, double p50,
                      double p99, double calls, double cpu, const char *note)
{
    char c[24] = "-";

    if (cpu >= 0)
        snprintf(c, sizeof c, "%.1f", cpu);
    fprintf(f, "| %s | 1 | %.0f%s | %.1f | %.1f | - | - | %.2f | %s | - |\n",
            name, ops, note, p50, p99, calls, c);
}

static void row_series(FILE *f, const lb_series *s)
{
    char x[48], c[48];

    if (!s->ran) {
        fprintf(f, "| %s | %d | FAILED: %s | | | | | | | **FAIL** |\n", s->name,
                s->k, s->err);
        return;
    }
    snprintf(c, sizeof c, "%s %lld/%lld",
             s->counter_ok && s->overlaps == 0 ? "OK" : "**FAIL**", s->counter,
             s->want);
    if (s->x50 >= 0)
        snprintf(x, sizeof x, "%.1f / %.1f", s->x50, s->x99);
    else
        snprintf(x, sizeof x, "none");
    if (!s->clock_ok)
        fprintf(f,
                "| %s | %d | %.0f | n/a (clock) | n/a | n/a | %.3f | "
                "%.2f | %.1f | %s |\n",
                s->name, s->k, s->cycles_s, s->sw, s->cmds_acq, s->cpu_acq, c);
    else
        fprintf(f,
                "| %s | %d | %.0f | %.1f | %.1f | %s | %.3f | %.2f | "
                "%.1f | %s |\n",
                s->name, s->k, s->cycles_s, s->h50, s->h99, x, s->sw,
                s->cmds_acq, s->cpu_acq, c);
}

/* The five single-client rows of one transport. */
static void rows_wire(FILE *f, const lb_wire *w, const char *wire)
{
    static const char *const name[4] = {
        "the library's scripts by hand (hiredis)", "redislock uncontended",
        "redislock uncontended, fair",
        "minimal raw loop: SET NX PX + compare-and-delete EVALSHA"};
    static const int order[4] = {3, 0, 1, 2};
    char row[128], note[64];
    int i;

    snprintf(row, sizeof row, "PING round trip (the limit), %s", wire);
    row_micro(f, row, w->ping_ops, w->ping_p50, w->ping_p99, 1, -1, "");
    for (i = 0; i < 4; i++) {
        int v = order[i];

        if (v == 3)
            note[0] = '\0';
        else if (v == 0)
            snprintf(note, sizeof note, " (%.3f x minimal)", w->ratio_min[v]);
        else
            snprintf(note, sizeof note, " (%.3f x minimal, %.3f x scripts)",
                     w->ratio_min[v], w->ratio[v]);
        snprintf(row, sizeof row, "%s, %s", name[v], wire);
        row_micro(f, row, w->rate[v], w->p50[v], w->p99[v], w->calls_cycle[v],
                  w->cpu_cycle[v], note);
    }
}

static void table(FILE *f, const lb_micro *m, const lb_series *s, size_t ns)
{
    size_t i;
    int t;

    fprintf(f, "| case | K | ops/s | p50 us | p99 us | "
               "holder-change p50 / p99 us | switch | cmds/acq | "
               "server CPU us/acq | counter |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|\n");
    for (t = 0; t < LB_WIRES; t++)
        if (m->w[t].ran)
            rows_wire(f, &m->w[t], lb_wire_name[t]);
    for (i = 0; i < ns; i++)
        row_series(f, &s[i]);
    fprintf(f,
            "\nSingle-client rows (over the unix socket, then loopback "
            "TCP): ops/s are round trips or acquire+release cycles, "
            "p50/p99 the time of one (median over %d interleaved rounds "
            "for the uncontended rates, the ratio is the median of "
            "per-round ratios). Other rows (unix socket): K processes "
            "on one lock, cycles/s over the whole run, p50/p99 the "
            "hand-off (next acquire returns - previous release starts), "
            "over all acquisitions and over those that change holder "
            "(shared, half readers: over hand-overs only, where the "
            "release and the acquire exclude each other; switch is "
            "their share that changes holder, and the counter counts "
            "the exclusive cycles). cmds/acq: INFO commandstats calls "
            "per acquisition (commands Lua scripts run included; the "
            "counter's GET and SET, a reader's GET, left out). server "
            "CPU us/acq: INFO cpu's used_cpu_user + used_cpu_sys "
            "growth per cycle (the contention runs' "
            "includes the counter's GET and SET; not measured for the "
            "PING rows).\n",
            m->rounds);
}

static const lb_series *find(const lb_series *s, size_t ns, lb_lib lib,
                             int fair, int k)
{
    size_t i;

    for (i = 0; i < ns; i++)
        if (s[i].lib == lib && s[i].fair == fair && s[i].k == k &&
            s[i].limit == 0 && !s[i].shared && s[i].set < 2 && !s[i].loop &&
            s[i].ran)
            return &s[i];
    return NULL;
}

/* The lock's run at K on an event loop, or NULL. */
static const lb_series *find_loop(const lb_series *s, size_t ns, int k)
{
    size_t i;

    for (i = 0; i < ns; i++)
        if (s[i].lib == LB_REDISLOCK && s[i].loop && s[i].k == k && s[i].ran)
            return &s[i];
    return NULL;
}

/* The event loop's hand-off against the blocking calls' (the default
 * mode's), same run: within 10 %, judged by the median over the pairs
 * run back to back (lockbench's loop_pairs), the single series shown. */
static void loop_line(const lb_series *s, size_t ns, const lb_series *def,
                      int k)
{
    const lb_series *lp = find_loop(s, ns, k);

    if (lp == NULL || def == NULL || lp->npairs == 0) {
        printf("  K=%d event loop or default mode run missing: MISS\n", k);
        return;
    }
    printf("  K=%d hand-off on an event loop (libevent) p50 within 10 %% of "
           "the blocking calls': median over %d pairs run back to back "
           "%.2f x %s (the series above: %.1f / %.1f us = %.2f x)\n",
           k, lp->npairs, lp->pair_ratio, yes(lp->pair_ratio <= 1.1), lp->h50,
           def->h50, lp->h50 / def->h50);
    printf("    (the floor of any event loop here: the raw hand-off waiting "
           "in epoll_wait() against blocked in read(), pairs the same way, "
           "%.2f x; the library's loop is %.2f x that)\n",
           lp->floor_ratio, ratio(lp->pair_ratio, lp->floor_ratio));
    if (lp->tcp_pair_ratio > 0)
        printf("  K=%d hand-off on an event loop over TCP p50 within 10 %% of "
               "the blocking calls': median over %d pairs %.2f x %s (the "
               "raw hand-off's floor over TCP %.2f x)\n",
               k, lp->npairs, lp->tcp_pair_ratio,
               yes(lp->tcp_pair_ratio <= 1.1), lp->tcp_floor_ratio);
}

/* The K the targets and the plot use: 8, else the largest one run. */
static int target_k(const lb_series *s, size_t ns)
{
    int k = 0;
    size_t i;

    for (i = 0; i < ns; i++) {
        if (s[i].k == 8)
            return 8;
        if (s[i].k > k)
            k = s[i].k;
    }
    return k;
}

/* One CDF data file of v (sorted, ns), at most ~1000 points. */
static int write_cdf(const char *path, const int64_t *v, size_t n)
{
    FILE *f = fopen(path, "w");
    size_t i, step = n / 1000 + 1;

    if (f == NULL)
        return -1;
    for (i = 0; i < n; i += step) {
        double us = (double)v[i] / 1e3;

        /* A log axis has no room for 0: clamp to 0.1 us. */
        fprintf(f, "%.3f %.5f\n", us < 0.1 ? 0.1 : us,
                (double)(i + 1) / (double)n);
    }
    if (n > 0)
        fprintf(f, "%.3f 1\n", (double)v[n - 1] / 1e3);
    fclose(f);
    return 0;
}

/* The settings both panels share: axes and the RTT marks. */
static void plot_axes(FILE *f, const lb_micro *m)
{
    double r2 = 2 * m->ping_p50, r10 = 10 * m->ping_p50;

    fprintf(f,
            "set logscale x\nset grid\nset yrange [0:1]\n"
            "set xlabel 'hand-off (us, log scale)'\n"
            "set ylabel 'share of hand-offs <= x'\n"
            "unset arrow\nunset label\n"
            "set arrow from %.2f, graph 0 to %.2f, graph 1 nohead "
            "dt 2 lc rgb 'gray40'\n"
            "set label ' 2 x RTT' at %.2f, graph 0.97 tc rgb 'gray40'\n"
            "set arrow from %.2f, graph 0 to %.2f, graph 1 nohead "
            "dt 3 lc rgb 'gray40'\n"
            "set label ' 10 x RTT' at %.2f, graph 0.92 tc rgb "
            "'gray40'\n",
            r2, r2, r2, r10, r10, r10);
}

/* One panel: a curve per series at K, from the data files of kind. */
static int plot_panel(FILE *f, const lb_env *e, const lb_series *s, size_t ns,
                      int k, int changes)
{
    char dat[1024];
    size_t i;
    int n = 0;

    for (i = 0; i < ns; i++) {
        const lb_series *x = &s[i];

        if (x->k != k || !x->ran || !x->clock_ok ||
            (changes ? x->nxhand : x->nhand) == 0)
            continue;
        snprintf(dat, sizeof dat, "%s/cdf-%s-k%d-%s.dat", e->out_dir, x->slug,
                 k, changes ? "changes" : "all");
        if (write_cdf(dat, changes ? x->xhand : x->hand,
                      changes ? x->nxhand : x->nhand) != 0)
            continue;
        /* Ours solid, the peers dashed. */
        fprintf(f, "%s '%s' using 1:2 with lines lw %s dt %d title '%s'",
                n ? ", \\\n    " : "plot", dat,
                x->lib == LB_REDISLOCK ? "2.5" : "1.5",
                x->lib == LB_REDISLOCK ? 1 : 2, x->name);
        n++;
    }
    fprintf(f, "\n");
    return n;
}

/* Two CDFs side by side: every hand-off, and those to another holder. */
static void plot(const lb_env *e, const lb_micro *m, const lb_series *s,
                 size_t ns, int k)
{
    char gp[1024], cmd[1100];
    FILE *f;
    int n;

    snprintf(gp, sizeof gp, "%s/handoff.gp", e->out_dir);
    if ((f = fopen(gp, "w")) == NULL)
        return;
    fprintf(f,
            "set terminal pngcairo size 1400,650 noenhanced\n"
            "set output '%s/handoff.png'\n"
            "set multiplot layout 1,2 title 'Lock hand-off, K=%d "
            "processes on one key: next acquire returns - previous "
            "release starts (PING p50 %.1f us)'\n"
            "set key bottom right font ',9'\n",
            e->out_dir, k, m->ping_p50);
    plot_axes(f, m);
    fprintf(f, "set title 'every acquisition'\n");
    n = plot_panel(f, e, s, ns, k, 0);
    fprintf(f, "set title 'acquisitions by another holder'\n");
    plot_panel(f, e, s, ns, k, 1);
    fprintf(f, "unset multiplot\n");
    fclose(f);
    if (n == 0)
        return;
    snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
    if (system(cmd) != 0)
        printf("lockbench: gnuplot failed; the plot is missing\n");
    else
        printf("Plot: %s/handoff.png\n", e->out_dir);
}

/* One target for both modes: fair's figure f and default mode's d (< 0:
 * not run) against limit, at most (at_most) or at least; figures in us,
 * or shares (unit "") with 3 decimals. */
static void both(int k, const char *what, double limit, const char *unit,
                 double f, double d, int at_most)
{
    int fok = at_most ? f <= limit : f >= limit;
    int dok = d >= 0 && (at_most ? d <= limit : d >= limit);
    int p = *unit ? 1 : 3;

    printf("  K=%d %s (%.*f%s): fair %.*f%s %s, default mode ", k, what, p,
           limit, unit, p, f, unit, yes(fok));
    if (d < 0)
        printf("not run MISS\n");
    else
        printf("%.*f%s %s\n", p, d, unit, yes(dok));
}

/* The uncontended targets over one transport: the cycle rate and the
 * server CPU per cycle, against the minimal raw loop's. */
static void uncontended(const lb_wire *w, const char *wire)
{
    double cd = ratio(w->cpu_cycle[1], w->cpu_cycle[3]);
    double cf = ratio(w->cpu_cycle[2], w->cpu_cycle[3]);

    if (!w->ran) {
        printf("  uncontended over %s: not run MISS\n", wire);
        return;
    }
    printf("  uncontended over %s >= 0.95 x minimal raw loop: default %.3f "
           "%s, fair %.3f %s (against the library's own scripts sent by "
           "hand: %.3f, %.3f)\n",
           wire, w->ratio_min[1], yes(w->ratio_min[1] >= 0.95), w->ratio_min[2],
           yes(w->ratio_min[2] >= 0.95), w->ratio[1], w->ratio[2]);
    printf("  server CPU per uncontended cycle over %s <= 1.3 x minimal raw "
           "loop's (%.1f us): default %.1f us = %.2f x %s, fair %.1f us = "
           "%.2f x %s\n",
           wire, w->cpu_cycle[3], w->cpu_cycle[1], cd, yes(cd <= 1.3),
           w->cpu_cycle[2], cf, yes(cf <= 1.3));
    printf("  uncontended over %s on an event loop (libevent) >= 0.9 x the "
           "blocking calls': %.3f %s\n",
           wire, w->loop_ratio, yes(w->loop_ratio >= 0.9));
    printf("    (the floor of any event loop here: the same scripts sent by "
           "hand, waiting in epoll_wait() rather than blocked in read(), "
           "%.3f x; the library's loop is %.3f x that)\n",
           w->loop_floor, ratio(w->loop_ratio, w->loop_floor));
    printf("    (pipelined 64 deep, so that no request waits for the "
           "server to wake: the library's scripts %.1f us, the minimal "
           "loop %.1f us per cycle, %.2f x)\n",
           w->piped_cpu[0], w->piped_cpu[3],
           ratio(w->piped_cpu[0], w->piped_cpu[3]));
}

/* The run at K of the library's series of a kind other than the lock
 * (a semaphore of limit 1, a shared lock, a set of keys): the lock's
 * analysis, against the lock's targets. */
static int is_sem(const lb_series *x)
{
    return x->limit;
}

static int is_shared(const lb_series *x)
{
    return x->shared;
}

static int is_set(const lb_series *x)
{
    return x->set > 1 ? x->set : 0;
}

static const lb_series *find_kind(const lb_series *s, size_t ns, int k,
                                  int (*is)(const lb_series *), int fair)
{
    size_t i;

    for (i = 0; i < ns; i++)
        if (s[i].lib == LB_REDISLOCK && is(&s[i]) && s[i].k == k &&
            s[i].fair == fair && s[i].ran)
            return &s[i];
    return NULL;
}

/* A kind's K hand-off p50 against the plain lock's of the same mode in
 * this run (issue 38: at most 1.5 x), judged by the median of the pairs
 * run back to back (lockbench's kind_pairs), the single series shown. */
static void over_plain(int k, const lb_series *m, const lb_series *plain,
                       int fair)
{
    if (plain == NULL || m->npairs == 0) {
        printf("    K=%d %splain lock run or pairs missing: <= 1.5 x the "
               "plain lock's MISS\n",
               k, fair ? "fair " : "");
        return;
    }
    printf("    p50 <= 1.5 x the %splain lock's: median over %d pairs run "
           "back to back %.2f x %s (the series above: %.1f / %.1f us = "
           "%.2f x)\n",
           fair ? "fair " : "", m->npairs, m->pair_ratio,
           yes(m->pair_ratio <= 1.5), m->h50, plain->h50,
           m->h50 / plain->h50);
}

/* The hand-off targets of the run of a kind (is picks it and gives its
 * size: a semaphore's limit, a set's keys), called kind, its size shown
 * with size (a format of one %d); fair: its fair run. */
static void kind_hand_off(const lb_series *s, size_t ns, double rtt, int k,
                          int (*is)(const lb_series *), const char *kind,
                          const char *size, int fair)
{
    const lb_series *m = find_kind(s, ns, k, is, fair);
    const lb_series *plain = find(s, ns, LB_REDISLOCK, fair, k);
    char sz[32];

    if (m == NULL) {
        printf("  K=%d %s%s run missing: MISS\n", k, fair ? "fair " : "", kind);
        return;
    }
    snprintf(sz, sizeof sz, size, is(m));
    printf("  K=%d %s%s (%s) hand-off p50 <= 2 x RTT (%.1f us): %.1f us %s; "
           "p99 <= 10 x RTT (%.1f us): %.1f us %s\n",
           k, fair ? "fair " : "", kind, sz, 2 * rtt, m->h50,
           yes(m->h50 <= 2 * rtt), 10 * rtt, m->h99, yes(m->h99 <= 10 * rtt));
    over_plain(k, m, plain, fair);
}

/* The shared lock's run (fair: the fair one): half the cycles readers,
 * hand-overs only where the two sides exclude each other. */
static void shared_lock(const lb_series *s, size_t ns, double rtt, int k,
                        int fair)
{
    const lb_series *m = find_kind(s, ns, k, is_shared, fair);

    if (m == NULL) {
        printf("  K=%d %sshared run missing: MISS\n", k, fair ? "fair " : "");
        return;
    }
    printf("  K=%d %sshared hand-over p50 <= 2 x RTT (%.1f us): %.1f us %s\n",
           k, fair ? "fair " : "", 2 * rtt, m->h50, yes(m->h50 <= 2 * rtt));
    over_plain(k, m, find(s, ns, LB_REDISLOCK, fair, k), fair);
    printf("    (half readers: %zu hand-overs in %lld acquisitions, p99 "
           "%.1f us; at most %d readers at once%s; counter = exclusive "
           "cycles: %lld/%lld %s; sections overlapping an exclusive one: "
           "%ld %s)\n",
           m->nhand, (long long)m->k * m->m, m->h99, m->readers,
           m->readers < 2 ? ", so no sharing seen" : "", m->counter, m->want,
           m->counter_ok ? "OK" : "FAIL", m->overlaps,
           m->overlaps == 0 ? "OK" : "FAIL: EXCLUSION BROKEN");
    printf("    (p50 by transition: writer to writer %.1f us (%zu), writer "
           "to reader %.1f us (%zu), reader to writer %.1f us (%zu))\n",
           m->t50[0], m->nt[0], m->t50[1], m->nt[1], m->t50[2], m->nt[2]);
}

/* The raw protocol's hand-off at K (LB_RAW), or NULL. */
static const lb_series *find_raw(const lb_series *s, size_t ns, int k)
{
    size_t i;

    for (i = 0; i < ns; i++)
        if (s[i].lib == LB_RAW && s[i].k == k && s[i].ran)
            return &s[i];
    return NULL;
}

/* What the library's hand-offs cost over the floor of the protocol they
 * use (no target: the floor says how much of 2 x RTT is left to the
 * library's scripts on this machine). */
static void floor_line(const lb_series *s, size_t ns, double rtt, int k)
{
    static const struct {
        const char *name;
        int (*is)(const lb_series *);
        int fair;
    } kinds[] = {{"semaphore", is_sem, 0},
                 {"fair semaphore", is_sem, 1},
                 {"shared", is_shared, 0},
                 {"fair shared", is_shared, 1},
                 {"set", is_set, 0}};
    const lb_series *raw = find_raw(s, ns, k), *x;
    size_t i;

    if (raw == NULL) {
        printf("  K=%d minimal raw hand-off run missing\n", k);
        return;
    }
    printf("  K=%d minimal raw hand-off (the protocol's floor, no target): "
           "p50 %.1f us = %.2f x RTT; the library's over it:",
           k, raw->h50, raw->h50 / rtt);
    for (i = 0; i < 2; i++)
        if ((x = find(s, ns, LB_REDISLOCK, (int)i, k)) != NULL)
            printf(" %slock %.2f x;", i ? "fair " : "", x->h50 / raw->h50);
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((x = find_kind(s, ns, k, kinds[i].is, kinds[i].fair)) != NULL)
            printf(" %s %.2f x;", kinds[i].name, x->h50 / raw->h50);
    printf("\n");
}

/* The floor of a wait behind another library's lock (no target): the
 * raw hiredis waiter's figures, and the library's (lib) over them. */
static void foreign_floor(const lb_foreign *raw, const lb_foreign *lib)
{
    if (!raw->ran || !raw->ok) {
        printf("  waiter behind a foreign holder, the protocol's floor: not "
               "measured%s%s\n",
               raw->ran ? ": " : "", raw->err);
        return;
    }
    printf("  waiter behind a foreign holder, the protocol's floor (raw "
           "hiredis: a tracked GET, SET NX on the notice; no target): p50 "
           "%.0f us, p99 %.2f ms; the library's over it: p50 %.2f x, p99 "
           "%.2f x\n",
           raw->p50, raw->p99 / 1e3, ratio(lib->p50, raw->p50),
           ratio(lib->p99, raw->p99));
}

/* Issue 38's target for a waiter behind another library's lock: the
 * p99 from the release's start to its grant. */
static void foreign_target(const lb_foreign *f)
{
    if (!f->ran) {
        printf("  waiter behind a foreign holder: p99 from %s to the "
               "grant <= 5 ms: not run (--no-peers)\n",
               lb_foreign_name(f));
        return;
    }
    printf("  waiter behind a foreign holder: p99 from %s to the grant <= "
           "5 ms: %.2f ms %s%s%s\n",
           lb_foreign_name(f), f->p99 / 1e3, yes(f->ok && f->p99 <= 5000),
           f->ok ? "" : " -- ", f->err);
}

/* The blocked waiters' targets, and those behind another library's
 * lock. */
static void waiter_targets(const lb_results *r)
{
    const lb_idle *idle = r->idle;
    int i, nidle = r->nidle;

    /* Behind a SET NX PX holder: the request connection of its first
     * attempt, and the two of the server's notices (src/node/track.h). */
    for (i = 0; i < nidle; i++)
        printf("  blocked waiter (%s) holds %d server connection%s: %d %s\n",
               lb_idle_name(&idle[i]), idle[i].foreign ? 3 : 1,
               idle[i].foreign ? "s" : "", idle[i].conns,
               yes(idle[i].conns <= (idle[i].foreign ? 3 : 1)));
    for (i = 0; i < nidle; i++)
        printf("  blocked waiter (%s) sends 0 commands/s: %.1f sent/s, "
               "%.1f server calls/s %s%s%s\n",
               lb_idle_name(&idle[i]), idle[i].sent, idle[i].calls,
               yes(idle[i].ok && idle[i].sent == 0), idle[i].ok ? "" : " -- ",
               idle[i].err);
    for (i = 0; i < r->nfw; i++)
        if (r->fw[i].raw)
            foreign_floor(&r->fw[i], &r->fw[0]);
        else
            foreign_target(&r->fw[i]);
}

static void targets(const lb_results *r, const lb_series *fair,
                    const lb_series *def, int k)
{
    const lb_series *s = r->s;
    const lb_micro *m = r->m;
    size_t ns = r->ns;
    double rtt = m->ping_p50, need = 0.8 / (3 * rtt / 1e6);
    int i;

    printf("\nTargets (against this run's PING p50 = %.1f us):\n", rtt);
    for (i = 0; i < LB_WIRES; i++)
        uncontended(&m->w[i], lb_wire_name[i]);
    if (fair == NULL) {
        printf("  K=%d fair run missing: contention targets MISS\n", k);
        return;
    }
    /* Hand-off and switch targets hold for both modes. */
    both(k, "hand-off p50 <= 2 x RTT", 2 * rtt, " us", fair->h50,
         def ? def->h50 : -1, 1);
    printf("  K=%d next holder's acquire returned before the releaser's "
           "release: fair %.3f, default mode %.3f of holder changes\n",
           k, fair->ahead, def ? def->ahead : -1);
    /* Issue 38: a fair hand-off is no slower than an unfair one, judged
     * as over_plain does. */
    if (k == 8 && def != NULL && fair->npairs > 0)
        printf("  K=%d fair hand-off p50 <= the default mode's: median over "
               "%d pairs run back to back %.2f x %s (the series above: "
               "%.1f / %.1f us = %.2f x)\n",
               k, fair->npairs, fair->pair_ratio, yes(fair->pair_ratio <= 1),
               fair->h50, def->h50, fair->h50 / def->h50);
    else if (k == 8)
        printf("  K=%d fair hand-off p50 <= the default mode's: a run or "
               "its pairs missing MISS\n",
               k);
    both(k, "hand-off p99 <= 10 x RTT", 10 * rtt, " us", fair->h99,
         def ? def->h99 : -1, 1);
    both(k, "switch share >= 0.9", 0.9, "", fair->sw, def ? def->sw : -1, 0);
    printf("  K=%d fair cycles/s >= 0.8 / (3 x RTT) = %.0f: %.0f %s\n", k, need,
           fair->cycles_s, yes(fair->cycles_s >= need));
    if (def != NULL)
        printf("  K=%d default mode cycles/s >= fair's (%.0f): %.0f %s\n", k,
               fair->cycles_s, def->cycles_s,
               yes(def->cycles_s >= fair->cycles_s));
    else
        printf("  K=%d default mode run missing: MISS\n", k);
    for (i = 0; i < 2 && k != 64; i++) {
        const lb_series *k64 = find(s, ns, LB_REDISLOCK, i, 64);
        const lb_series *k8 = i ? fair : def;

        if (k64 != NULL && k8 != NULL)
            printf("  K=64 %s cycles/s >= 0.9 x K=%d's (%.0f): %.0f %s\n",
                   i ? "fair" : "default mode", k, 0.9 * k8->cycles_s,
                   k64->cycles_s, yes(k64->cycles_s >= 0.9 * k8->cycles_s));
        else
            printf("  K=64 %s run missing: scaling target MISS\n",
                   i ? "fair" : "default mode");
    }
    for (i = 0; i < 2; i++) {
        kind_hand_off(s, ns, rtt, k, is_sem, "semaphore", "limit %d", i);
        shared_lock(s, ns, rtt, k, i);
    }
    kind_hand_off(s, ns, rtt, k, is_set, "set", "%d keys", 0);
    floor_line(s, ns, rtt, k);
    loop_line(s, ns, def, k);
    waiter_targets(r);
}

/* One event loop at scale: connections bounded, memory and CPU per held
 * lock reported (no target of their own). */
static void loop_scale(const lb_scale *sc)
{
    if (!sc->ok && sc->err[0] != '\0') {
        printf("Event loop at scale: not measured: %s\n", sc->err);
        return;
    }
    printf("Event loop at scale (one thread, libevent): %d locks held with "
           "the watchdog on, %d waiting: %.0f bytes of client memory and "
           "%.2f us of client CPU per held lock per second (renewals "
           "every %d ms); %d held locks without validity after the window\n",
           sc->n, sc->m, sc->rss_per_lock, sc->cpu_us_per_lock_s, 2000,
           sc->lost);
    printf("  %d locks held and %d waiting on <= 10 server connections: %lld "
           "%s\n",
           sc->n, sc->m, sc->conns, yes(sc->conns <= 10 && sc->conns > 0));
    printf("  the %d waiters all acquired once released: %s in %.0f ms "
           "(%d were still waiting before) %s\n",
           sc->m, sc->woke ? "yes" : "no", sc->wake_all_ms, sc->waiting,
           yes(sc->woke && sc->waiting == sc->m));
}

/* Each kind's server CPU per uncontended cycle against the plain lock's
 * (issue 38: at most 1.5 x). */
static void kinds_cpu(const lb_kinds *kd)
{
    int k;

    if (kd == NULL || !kd->ran)
        return;
    printf("Server CPU per uncontended cycle by kind (unix socket, blocking "
           "calls, %d rounds):",
           kd->rounds);
    for (k = 0; k < LB_KINDS; k++)
        printf("%s %s %.1f us", k ? "," : "", lb_kind_name[k], kd->cpu[k]);
    printf("\n");
    for (k = 1; k < LB_KINDS; k++)
        printf("  server CPU per uncontended cycle, %s <= 1.5 x the plain "
               "lock's: %.2f x %s\n",
               lb_kind_name[k], kd->ratio[k], yes(kd->ratio[k] <= 1.5));
}

/* Memory per held plain lock, against SET NX PX's (target: 1.2 x). */
static void memory(const lb_memory *mem)
{
    double ratio = mem->raw_bytes > 0 ? mem->lib_bytes / mem->raw_bytes : 0;

    if (!mem->ok) {
        printf("Memory per held lock: not measured: %s\n", mem->err);
        return;
    }
    printf("Memory per held plain lock over %d locks: %.0f bytes and %.2f "
           "keys; SET NX PX: %.0f bytes and %.2f keys\n",
           mem->n, mem->lib_bytes, mem->lib_keys, mem->raw_bytes,
           mem->raw_keys);
    printf("  memory per held lock <= 1.2 x SET NX PX: %.2f x %s\n", ratio,
           yes(ratio <= 1.2));
}

/* A foreign series' p50 and p99 for the last line (-1: not run). */
static void foreign_fields(const lb_results *r, int py, int raw, double *p50,
                           double *p99)
{
    int i;

    *p50 = *p99 = -1;
    for (i = 0; i < r->nfw; i++)
        if (r->fw[i].py == py && r->fw[i].raw == raw && r->fw[i].ran &&
            r->fw[i].got > 0) {
            *p50 = r->fw[i].p50;
            *p99 = r->fw[i].p99;
        }
}

/* A series' median pair ratio for the last line (-1: not measured). */
static double pair_of(const lb_series *x)
{
    return x != NULL && x->npairs > 0 ? x->pair_ratio : -1;
}

/* The machine-readable last line; its fields are only ever appended to,
 * as scripts read it. */
static void machine_line(const lb_results *r, int k)
{
    const lb_series *s = r->s;
    size_t ns = r->ns;
    const lb_micro *m = r->m;
    const lb_memory *mem = r->mem;
    const lb_scale *scale = r->scale;
    const lb_series *fair = find(s, ns, LB_REDISLOCK, 1, k);
    const lb_series *k64 = find(s, ns, LB_REDISLOCK, 1, 64);
    /* bench/run.sh's Redlock run and CLI run (against flock(1)): their
     * machine-readable figures. */
    const char *redlock = getenv("BENCH_REDLOCK");
    const char *runcost = getenv("BENCH_RUNCOST");
    const lb_wire *u = &m->w[LB_UNIX], *tcp = &m->w[LB_TCP];
    const lb_series *sem = find_kind(s, ns, k, is_sem, 0);
    const lb_series *sh = find_kind(s, ns, k, is_shared, 0);
    const lb_series *set = find_kind(s, ns, k, is_set, 0);
    const lb_series *semf = find_kind(s, ns, k, is_sem, 1);
    const lb_series *shf = find_kind(s, ns, k, is_shared, 1);
    double f50, f99, p50, p99, r50, r99;

    printf("rtt_p50_us=%.1f cycle_ratio=%.3f cycle_ratio_scripts=%.3f "
           "cycle_ratio_default=%.3f cycle_ratio_tcp=%.3f "
           "cycle_ratio_tcp_default=%.3f srv_cpu_cycle_us=%.1f "
           "srv_cpu_ratio=%.2f srv_cpu_ratio_default=%.2f "
           "srv_cpu_ratio_tcp=%.2f handoff_p50_us=%.1f "
           "handoff_p99_us=%.1f k8_cycles_per_s=%.0f k64_cycles_per_s=%.0f "
           "k8_switch=%.3f sem_handoff_p50_us=%.1f lock_bytes=%.0f "
           "setnx_bytes=%.0f shared_handoff_p50_us=%.1f "
           "set_handoff_p50_us=%.1f sem_fair_handoff_p50_us=%.1f "
           "shared_fair_handoff_p50_us=%.1f raw_handoff_p50_us=%.1f "
           "loop_handoff_p50_us=%.1f loop_handoff_ratio=%.3f "
           "loop_handoff_floor=%.3f loop_handoff_ratio_tcp=%.3f "
           "loop_cycle_ratio=%.3f loop_floor_ratio=%.3f "
           "loop_held=%d loop_conns=%lld loop_bytes_per_lock=%.0f "
           "loop_cpu_us_per_lock_s=%.2f",
           m->ping_p50, u->ratio_min[2], u->ratio[2], u->ratio_min[1],
           tcp->ratio_min[2], tcp->ratio_min[1], u->cpu_cycle[2],
           ratio(u->cpu_cycle[2], u->cpu_cycle[3]),
           ratio(u->cpu_cycle[1], u->cpu_cycle[3]),
           ratio(tcp->cpu_cycle[2], tcp->cpu_cycle[3]), fair ? fair->h50 : -1,
           fair ? fair->h99 : -1, fair ? fair->cycles_s : 0,
           k64 ? k64->cycles_s : 0, fair ? fair->sw : 0, sem ? sem->h50 : -1,
           mem->ok ? mem->lib_bytes : -1, mem->raw_bytes, sh ? sh->h50 : -1,
           set ? set->h50 : -1, semf ? semf->h50 : -1, shf ? shf->h50 : -1,
           find_raw(s, ns, k) ? find_raw(s, ns, k)->h50 : -1,
           find_loop(s, ns, k) ? find_loop(s, ns, k)->h50 : -1,
           find_loop(s, ns, k) ? find_loop(s, ns, k)->pair_ratio : -1,
           find_loop(s, ns, k) ? find_loop(s, ns, k)->floor_ratio : -1,
           find_loop(s, ns, k) ? find_loop(s, ns, k)->tcp_pair_ratio : -1,
           u->loop_ratio, u->loop_floor, scale->n, scale->conns,
           scale->rss_per_lock, scale->cpu_us_per_lock_s);
    foreign_fields(r, 0, 0, &f50, &f99);
    foreign_fields(r, 1, 0, &p50, &p99);
    foreign_fields(r, 0, 1, &r50, &r99);
    if (r->kinds != NULL && r->kinds->ran)
        printf(" kind_cpu_ratio_fair=%.2f kind_cpu_ratio_sem=%.2f "
               "kind_cpu_ratio_shared=%.2f kind_cpu_ratio_set=%.2f",
               r->kinds->ratio[LB_KIND_FAIR], r->kinds->ratio[LB_KIND_SEM],
               r->kinds->ratio[LB_KIND_SHARED], r->kinds->ratio[LB_KIND_SET]);
    printf(" fair_handoff_pair_ratio=%.3f sem_handoff_pair_ratio=%.3f "
           "shared_handoff_pair_ratio=%.3f set_handoff_pair_ratio=%.3f "
           "sem_fair_handoff_pair_ratio=%.3f "
           "shared_fair_handoff_pair_ratio=%.3f",
           pair_of(fair), pair_of(sem), pair_of(sh), pair_of(set),
           pair_of(semf), pair_of(shf));
    printf(" foreign_wake_p50_us=%.1f foreign_wake_p99_us=%.1f "
           "pyforeign_wake_p50_us=%.1f pyforeign_wake_p99_us=%.1f "
           "foreign_floor_p50_us=%.1f foreign_floor_p99_us=%.1f%s%s%s%s\n",
           f50, f99, p50, p99, r50, r99, redlock ? " " : "",
           redlock ? redlock : "", runcost ? " " : "", runcost ? runcost : "");
}

/* The blocked waiters' traffic, and the wake-ups behind another
 * library's lock. */
static void waiters(const lb_results *r)
{
    const lb_idle *idle = r->idle;
    const lb_foreign *f;
    int i;

    for (i = 0; i < r->nidle; i++)
        printf("Blocked waiter (%s) behind a 60 s lease, over 1 s: "
               "%.1f commands sent, %.1f server calls, %d server "
               "connections held; woke %.1f us after the release began%s%s\n",
               lb_idle_name(&idle[i]), idle[i].sent, idle[i].calls,
               idle[i].conns, idle[i].wake_us,
               idle[i].ok ? "" : "; FAIL: ", idle[i].err);
    for (f = r->fw; f < r->fw + r->nfw; f++)
        if (f->ran)
            printf("%s behind a SET NX PX holder, from "
                   "%s to the grant, %d cycles: p50 %.0f us, p90 %.0f us, "
                   "p99 %.0f us, max %.0f us%s%s\n",
                   f->raw ? "Raw hiredis waiter (the protocol's floor)"
                          : "Waiter (default mode)",
                   lb_foreign_name(f), f->got, f->p50, f->p90, f->p99, f->max,
                   f->ok ? "" : "; FAIL: ", f->err);
}

void lb_report(const lb_env *e, const lb_results *r, const char *machine)
{
    char path[1024];
    lb_series *s = r->s;
    size_t ns = r->ns;
    int k = target_k(s, ns);
    FILE *f;

    printf("\n");
    table(stdout, r->m, s, ns);
    snprintf(path, sizeof path, "%s/results.md", e->out_dir);
    if ((f = fopen(path, "w")) != NULL) {
        fprintf(f, "%s\n\n", machine);
        table(f, r->m, s, ns);
        fclose(f);
    }
    printf("\n");
    waiters(r);
    plot(e, r->m, s, ns, k);
    targets(r, find(s, ns, LB_REDISLOCK, 1, k), find(s, ns, LB_REDISLOCK, 0, k),
            k);
    memory(r->mem);
    kinds_cpu(r->kinds);
    loop_scale(r->scale);
    if (lb_failed(r))
        printf("\n*** FAIL: a counter check, the exclusion check or a run "
               "failed (see the table) ***\n");
    machine_line(r, k);
}

/* The server's name and version: Valkey's own (its redis_version is the
 * Redis it is compatible with), else Redis's. */
static void server_version(redisContext *c, char *buf, size_t len)
{
    redisReply *r = lb_cmd(c, "INFO server");
    const char *v = strstr(r->str, "valkey_version:");
    const char *name = v ? "valkey" : "redis";

    if (v == NULL)
        v = strstr(r->str, "redis_version:");
    if (v != NULL)
        v = strchr(v, ':') + 1;
    snprintf(buf, len, "%s-%.*s", name, v ? (int)strcspn(v, "\r\n") : 1,
             v ? v : "?");
    freeReplyObject(r);
}

/* The server's own compare-and-delete, which the library's uncontended
 * releases use where it exists: "delifeq", "delex" or "none". */
static const char *native_release(redisContext *c)
{
    redisReply *r = lb_cmd(c, "COMMAND INFO DELIFEQ DELEX");
    const char *cmd = "none";

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2) {
        if (r->element[0]->type == REDIS_REPLY_ARRAY)
            cmd = "delifeq";
        else if (r->element[1]->type == REDIS_REPLY_ARRAY)
            cmd = "delex";
    }
    freeReplyObject(r);
    return cmd;
}

void lb_report_core(const lb_env *e, const lb_results *r)
{
    const lb_wire *u = &r->m->w[LB_UNIX];
    const lb_series *def = find(r->s, r->ns, LB_REDISLOCK, 0, 8);
    const lb_series *fair = find(r->s, r->ns, LB_REDISLOCK, 1, 8);
    char v[64];

    server_version(e->ctl, v, sizeof v);
    printf("\nlockbench --core against %s (PING p50 %.1f us):\n", v,
           r->m->ping_p50);
    uncontended(u, lb_wire_name[LB_UNIX]);
    printf("  K=8 hand-off p50 / p99: default mode %.1f / %.1f us, fair "
           "%.1f / %.1f us%s\n",
           def ? def->h50 : -1, def ? def->h99 : -1, fair ? fair->h50 : -1,
           fair ? fair->h99 : -1,
           lb_failed(r) ? " -- FAIL: a counter or exclusion check, or a run"
                        : "");
    printf("server=%s rtt_p50_us=%.1f cycle_ratio_default=%.3f "
           "cycle_ratio=%.3f srv_cpu_ratio_default=%.2f srv_cpu_ratio=%.2f "
           "handoff_default_p50_us=%.1f handoff_p50_us=%.1f native=%s "
           "failed=%d\n",
           v, r->m->ping_p50, u->ratio_min[1], u->ratio_min[2],
           ratio(u->cpu_cycle[1], u->cpu_cycle[3]),
           ratio(u->cpu_cycle[2], u->cpu_cycle[3]), def ? def->h50 : -1,
           fair ? fair->h50 : -1, native_release(e->ctl), lb_failed(r));
}

int lb_failed(const lb_results *r)
{
    size_t i;
    int j;

    for (i = 0; i < r->ns; i++)
        if (!r->s[i].ran || !r->s[i].counter_ok || r->s[i].overlaps != 0)
            return 1;
    for (j = 0; j < r->nidle; j++)
        if (!r->idle[j].ok)
            return 1;
    for (j = 0; j < r->nfw; j++)
        if (r->fw[j].ran && !r->fw[j].ok)
            return 1;
    return 0;
}
