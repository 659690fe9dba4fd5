/*
 * rl-cpp-test URL: redislock.hpp against a private server (tests/cli/cpp.sh
 * runs it). Errors as exceptions (what() says the detail once) and as
 * std::error_code, move-only handles, and each guard: it excludes what
 * its kind excludes while its scope lasts and gives the lock back when
 * the scope ends (by exception too), a moved guard releases once, and a
 * guard whose lease ran out reports REDISLOCK_EEXPIRED from release()
 * and nothing from its destructor. redislock::lockable with the
 * standard's lock types: std::lock_guard, std::unique_lock (try_to_lock,
 * defer_lock, try_lock_for and try_lock_until with a holder that keeps
 * the lock or lets it go), std::scoped_lock over two keys taken in
 * opposite orders, the errors lock() throws and unlock() records; with
 * URL2 and PID2, a second server that the test stops (SIGSTOP) after
 * connecting: lock() throws rather than waiting on. Prints what failed
 * and exits 1, or exits 0.
 */
#include <redislock.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <sys/types.h>
#include <thread>
#include <type_traits>
#include <utility>

using namespace std::chrono_literals;

static int failed;

#define CHECK(x)                                                               \
    do {                                                                       \
        if (!(x)) {                                                            \
            std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,        \
                         __LINE__, #x);                                        \
            failed++;                                                          \
        }                                                                      \
    } while (0)

/* What f throws: the redislock_err of a redislock::error, or REDISLOCK_OK
 * when it throws nothing (another exception fails the test). */
template <class F> static redislock_err thrown(F f)
{
    try {
        f();
    } catch (const redislock::error &e) {
        return e.value();
    }
    return REDISLOCK_OK;
}

static_assert(!std::is_copy_constructible_v<redislock::client>);
static_assert(!std::is_copy_constructible_v<redislock::lock>);
static_assert(!std::is_copy_constructible_v<redislock::unique_guard>);
static_assert(std::is_nothrow_move_constructible_v<redislock::lock>);
static_assert(std::is_nothrow_move_constructible_v<redislock::unique_guard>);

/* How many times w stands in s. */
static int times(const std::string &s, const std::string &w)
{
    int n = 0;

    for (auto i = s.find(w); i != std::string::npos; i = s.find(w, i + 1))
        n++;
    return n;
}

/* what() says the detail once, with no code's message after it. */
static void messages(const std::string &url)
{
    redislock::client c(url);
    redislock::lock h(c, "cpp:what"), w(c, "cpp:what");
    const std::string held = redislock_strerror(REDISLOCK_EHELD);

    try {
        redislock::client bad("nosuch://x");
    } catch (const redislock::error &e) {
        CHECK(e.what() == std::string(redislock_errdetail()));
    }
    h.acquire();
    try {
        w.acquire();
        CHECK(!"acquired a held lock");
    } catch (const redislock::error &e) {
        /* The detail starts with the code's message, then the TTL. */
        CHECK(times(e.what(), held) == 1);
        CHECK(e.what() == std::string(redislock_errdetail()));
    }
    h.release();
    /* A thread that has seen no failure has no detail: the message. */
    std::thread([] {
        redislock::error e(REDISLOCK_EIO);

        CHECK(e.what() == std::string(redislock_strerror(REDISLOCK_EIO)));
    }).join();
}

static void errors(const std::string &url)
{
    std::error_code ec = redislock::make_error_code(REDISLOCK_EHELD);

    CHECK(std::strcmp(ec.category().name(), "redislock") == 0);
    CHECK(ec.message() == redislock_strerror(REDISLOCK_EHELD));
    CHECK(thrown([] { redislock::client c("nosuch://x"); }) ==
          REDISLOCK_EINVAL);
    try {
        redislock::client c("nosuch://x");
    } catch (const redislock::error &e) {
        /* what() is the library's detail, naming the problem. */
        CHECK(std::strstr(e.what(), "nosuch") != nullptr);
        CHECK(e.code() == redislock::make_error_code(REDISLOCK_EINVAL));
    }
    /* The constructors of several servers' clients report alike. */
    CHECK(thrown([] { redislock::client::sharded({"nosuch://x"}); }) ==
          REDISLOCK_EINVAL);
    CHECK(thrown([] { redislock::client::cluster({"nosuch://x"}); }) ==
          REDISLOCK_EINVAL);
    CHECK(thrown([] { redislock::client::redlock({"nosuch://x"}); }) ==
          REDISLOCK_EINVAL);
    {
        /* A sharded client of one server works as a client of it. */
        redislock::client s = redislock::client::sharded({url});
        redislock::lock sl(s, "cpp:sharded");

        CHECK(sl.try_acquire());
        sl.release();
    }
    redislock::client c(url);
    redislock::lock l(c, "cpp:err");
    CHECK(thrown([&] { l.release(); }) == REDISLOCK_EINVAL);
    l.release(ec);
    CHECK(ec.value() == REDISLOCK_EINVAL);
}

static void unique(const std::string &url)
{
    redislock::client c(url);
    redislock::lock a(c, "cpp:u"), b(c, "cpp:u");
    redislock::acquire_options o;
    std::error_code ec;

    o.ttl = 10s;
    {
        redislock::unique_guard g(a, o);
        CHECK(a.held() && a.valid() && a.fence() > 0);
        CHECK(a.valid_for() > 9s && a.valid_for() <= 10s);
        CHECK(!b.try_acquire());
        CHECK(!b.try_acquire(o.raw(), ec) && ec.value() == REDISLOCK_EHELD);
        CHECK(thrown([&] { b.acquire(); }) == REDISLOCK_EHELD);
        /* A guard moved from releases nothing; the new one, once. */
        redislock::unique_guard moved(std::move(g));
        CHECK(a.held());
    }
    CHECK(!a.held());
    CHECK(b.try_acquire(o));
    b.extend(20s);
    CHECK(b.valid_for() > 19s);
    b.release();
    /* The scope left by an exception gives it back too. */
    try {
        redislock::unique_guard g(a, o);
        throw 42;
    } catch (int) {
    }
    CHECK(!a.held() && b.try_acquire());
    b.release();
    /* A lock moved keeps what it holds. */
    redislock::lock m(std::move(a));
    CHECK(a.get() == nullptr);
    CHECK(m.try_acquire(o) && m.held() && !m.token().empty());
    m.release();
}

static void expired(const std::string &url)
{
    redislock::client c(url);
    redislock::lock a(c, "cpp:x");
    redislock::acquire_options o;

    o.ttl = 50ms;
    {
        redislock::unique_guard g(a, o);
        std::this_thread::sleep_for(120ms);
        CHECK(!a.valid());
        CHECK(thrown([&] { g.release(); }) == REDISLOCK_EEXPIRED);
    }
    {
        /* Its destructor swallows the same error. */
        redislock::unique_guard g(a, o);
        std::this_thread::sleep_for(120ms);
    }
    CHECK(!a.held());
}

static void kinds(const std::string &url)
{
    redislock::client c(url);
    redislock::lock r1(c, "cpp:k"), r2(c, "cpp:k"), w(c, "cpp:k");
    redislock::acquire_options o;
    redislock_acquire_options permit{};

    o.ttl = 10s;
    {
        redislock::shared_guard g1(r1, o), g2(r2, o);
        CHECK(r1.held() && r2.held() && r1.token() != r2.token());
        CHECK(!w.try_acquire());
    }
    CHECK(w.try_acquire());
    CHECK(thrown([&] { redislock::shared_guard g(r1, o); }) ==
          REDISLOCK_EHELD);
    w.release();
    permit.limit = 2;
    {
        redislock::permit_guard p1(r1, 2, o), p2(r2, 2, o);
        CHECK(!w.try_acquire(permit));
        /* Another limit for the key is an error, not a wait. */
        permit.limit = 3;
        CHECK(thrown([&] { w.try_acquire(permit); }) == REDISLOCK_EINVAL);
        permit.limit = 2;
    }
    CHECK(w.try_acquire(permit));
    w.release();
    /* A set of keys: all of them held, each excluded. */
    redislock::lock set(c, {"cpp:s1", "cpp:s2"}), one(c, "cpp:s2");
    {
        redislock::unique_guard g(set, o);
        CHECK(!one.try_acquire());
    }
    CHECK(one.try_acquire());
    one.release();
}

/* The time f takes. */
template <class F> static std::chrono::milliseconds took(F f)
{
    const auto t0 = std::chrono::steady_clock::now();

    f();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
}

/* A lockable with std::lock_guard and std::unique_lock, another owner
 * holding it or not; try_lock_for() waits its time out, or until the
 * holder lets go. */
static void lockables(const std::string &url)
{
    redislock::client c(url);
    redislock::lock a(c, "cpp:m"), b(c, "cpp:m");
    redislock::acquire_options o;

    o.ttl = 10s;
    redislock::lockable ma(a, o), mb(b, o);
    {
        std::lock_guard<redislock::lockable> g(ma);
        CHECK(a.held() && !mb.try_lock());
    }
    CHECK(!a.held() && !ma.unlock_error());
    {
        std::unique_lock<redislock::lockable> ub(mb, std::try_to_lock);
        std::unique_lock<redislock::lockable> ua(ma, std::try_to_lock);
        CHECK(ub.owns_lock() && b.held() && !ua.owns_lock() && !a.held());
        std::unique_lock<redislock::lockable> d(ma, std::defer_lock);
        CHECK(!d.owns_lock() && !a.held());
        /* Held throughout: false after the wait, not before. */
        auto t = took([&] { CHECK(!d.try_lock_for(300ms)); });
        CHECK(t >= 290ms && t < 2s);
        t = took([&] {
            CHECK(!d.try_lock_until(std::chrono::steady_clock::now() + 200ms));
        });
        CHECK(t >= 190ms && t < 2s);
        /* Let go within the wait: taken then. */
        std::thread holder([&] {
            std::this_thread::sleep_for(300ms);
            ub.unlock();
        });
        t = took([&] { CHECK(d.try_lock_for(5s)); });
        holder.join();
        CHECK(t >= 250ms && t < 3s);
        CHECK(d.owns_lock() && a.held() && !b.held());
        /* lock() waits without a deadline, here until a's release. */
        std::thread waiter([&] {
            t = took([&] { ub.lock(); });
            CHECK(b.held());
            ub.unlock();
        });
        std::this_thread::sleep_for(300ms);
        d.unlock();
        waiter.join();
        CHECK(t >= 250ms && t < 3s);
        CHECK(!mb.unlock_error());
    }
    CHECK(!a.held() && !b.held());
}

/* lock() and try_lock() throw what is not "held by another": a handle
 * that holds already (not reentrant) is REDISLOCK_EINVAL. Reentrant by
 * the C options, each lock() is a hold. unlock() after the lease ran
 * out throws nothing and records it. */
static void lockable_errors(const std::string &url)
{
    redislock::client c(url);
    redislock::lock a(c, "cpp:me");
    redislock::acquire_options o;
    redislock_acquire_options r{};

    static_assert(!std::is_copy_constructible_v<redislock::lockable>);
    static_assert(noexcept(std::declval<redislock::lockable &>().unlock()));
    o.ttl = 10s;
    {
        redislock::lockable m(a, o);
        std::lock_guard<redislock::lockable> g(m);

        CHECK(thrown([&] { m.lock(); }) == REDISLOCK_EINVAL);
        CHECK(thrown([&] { m.try_lock(); }) == REDISLOCK_EINVAL);
    }
    CHECK(!a.held());
    r.ttl_ms = 10000;
    r.reentrant = 1;
    {
        redislock::lockable m(a, r);
        std::lock_guard<redislock::lockable> g1(m);
        std::lock_guard<redislock::lockable> g2(m);

        CHECK(redislock_holds(a.get()) == 2);
    }
    CHECK(!a.held());
    o.ttl = 50ms;
    redislock::lockable m(a, o);
    {
        std::lock_guard<redislock::lockable> g(m);
        std::this_thread::sleep_for(120ms);
    }
    CHECK(m.unlock_error() == redislock::make_error_code(REDISLOCK_EEXPIRED));
    CHECK(!a.held());
}

/* std::scoped_lock (std::lock) takes two keys, neither held meanwhile
 * when it cannot have both, so two threads that name them in opposite
 * orders never deadlock, and are never both inside. */
static void lockable_scoped(const std::string &url)
{
    redislock::client c(url);
    std::atomic<int> inside{0}, overlaps{0};
    auto worker = [&](const char *k1, const char *k2) {
        redislock::lock l1(c, k1), l2(c, k2);
        redislock::acquire_options o;

        o.ttl = 10s;
        redislock::lockable m1(l1, o), m2(l2, o);
        for (int i = 0; i < 20; i++) {
            std::scoped_lock s(m1, m2);

            if (inside++ != 0)
                overlaps++;
            std::this_thread::sleep_for(2ms);
            inside--;
        }
    };
    std::thread t1(worker, "cpp:s1", "cpp:s2"), t2(worker, "cpp:s2", "cpp:s1");
    t1.join();
    t2.join();
    CHECK(overlaps == 0);
    redislock::lock l1(c, "cpp:s1"), l2(c, "cpp:s2");
    CHECK(l1.try_acquire() && l2.try_acquire());
    l1.release();
    l2.release();
}

/* lock() throws when a request fails, without the wait retrying it: the
 * server (pid) stops answering after the client has connected. */
static void lockable_unreachable(const std::string &url, pid_t pid)
{
    redislock_options co{};

    co.connect_timeout_ms = 300;
    co.command_timeout_ms = 300;
    redislock::client c(url, &co);
    redislock::lock l(c, "cpp:gone");
    redislock::lockable m(l);

    CHECK(kill(pid, SIGSTOP) == 0);
    redislock_err e = REDISLOCK_OK;
    auto t = took([&] { e = thrown([&] { std::lock_guard g(m); }); });
    CHECK(e == REDISLOCK_ETIMEDOUT || e == REDISLOCK_ECONNECT ||
          e == REDISLOCK_EIO);
    CHECK(t < 3s);
    CHECK(kill(pid, SIGCONT) == 0);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 4) {
        std::fprintf(stderr, "usage: rl-cpp-test URL [URL2 PID2]\n");
        return 64;
    }
    try {
        errors(argv[1]);
        messages(argv[1]);
        unique(argv[1]);
        expired(argv[1]);
        kinds(argv[1]);
        lockables(argv[1]);
        lockable_errors(argv[1]);
        lockable_scoped(argv[1]);
        if (argc == 4)
            lockable_unreachable(argv[2],
                                 static_cast<pid_t>(std::atol(argv[3])));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    if (failed)
        std::fprintf(stderr, "%d checks failed\n", failed);
    return failed ? 1 : 0;
}
