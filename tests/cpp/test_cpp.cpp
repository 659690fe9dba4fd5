/*
 * rl-cpp-test URL: redislock.hpp against a private server (tests/cli/cpp.sh
 * runs it). Errors as exceptions (what() says the detail once) and as
 * std::error_code, move-only handles, and each guard: it excludes what
 * its kind excludes while its scope lasts and gives the lock back when
 * the scope ends (by exception too), a moved guard releases once, and a
 * guard whose lease ran out reports REDISLOCK_EEXPIRED from release()
 * and nothing from its destructor. Prints what failed and exits 1, or
 * exits 0.
 */
#include <redislock.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
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

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: rl-cpp-test URL\n");
        return 64;
    }
    try {
        errors(argv[1]);
        messages(argv[1]);
        unique(argv[1]);
        expired(argv[1]);
        kinds(argv[1]);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    if (failed)
        std::fprintf(stderr, "%d checks failed\n", failed);
    return failed ? 1 : 0;
}
