/*
 * redislock for C++17: a header over redislock.h, nothing to link but
 * libredislock. Move-only handles that free what they own; RAII guards
 * that take a lock, a share of one or a semaphore's permit for a scope
 * and give it back when the scope ends; lockable, which lets the
 * standard's std::lock_guard, std::unique_lock and std::scoped_lock do
 * the same; durations as std::chrono.
 *
 * Errors are exceptions: every call that fails throws redislock::error, a
 * std::system_error whose code() is in redislock::category() (its value
 * the redislock_err) and whose what() is redislock_errdetail()'s text.
 * The one expected failure, a lock held by someone else, has calls that
 * say so instead: try_acquire() returns false. Calls that take a
 * std::error_code& throw nothing. Destructors never throw: a guard whose
 * release fails forgets the error (call release() first to see it);
 * lockable::unlock() throws nothing either, and keeps the error.
 *
 * man redislock_cpp (section 3) has the whole story.
 */
#ifndef REDISLOCK_HPP
#define REDISLOCK_HPP

/* C, or C++ before C++17, would fail below on std::string_view and the
 * like; one line says why instead. MSVC gives the standard in _MSVC_LANG
 * (its __cplusplus is 199711L without /Zc:__cplusplus). */
#if !defined(__cplusplus) ||                                                   \
    (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201703L
#error "redislock.hpp needs C++17 (-std=c++17); before C++17 use <redislock.h>"
#else

#include <redislock.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace redislock {

/* The redislock_err values as a std::error_category. */
class error_category_t final : public std::error_category {
  public:
    const char *name() const noexcept override { return "redislock"; }
    std::string message(int c) const override
    {
        return redislock_strerror(static_cast<redislock_err>(c));
    }
};

inline const std::error_category &category() noexcept
{
    static const error_category_t c;
    return c;
}

inline std::error_code make_error_code(redislock_err e) noexcept
{
    return {static_cast<int>(e), category()};
}

/* What every throwing call throws: the code and the library's detail.
 * what() is the detail alone, which names the problem in full; the
 * code's message is what() only when there is no detail. */
class error : public std::system_error {
  public:
    explicit error(redislock_err e)
        : std::system_error(make_error_code(e)), what_(text(e))
    {
    }
    const char *what() const noexcept override { return what_.what(); }
    redislock_err value() const noexcept
    {
        return static_cast<redislock_err>(code().value());
    }

  private:
    static const char *text(redislock_err e) noexcept
    {
        const char *d = redislock_errdetail();

        return *d != '\0' ? d : redislock_strerror(e);
    }
    /* Not the base's what(), which follows the detail with the code's
     * message, saying it twice ("lock is held by another owner (...):
     * lock is held by another owner"). A std::runtime_error, as its
     * copies share the text and throw nothing, as an exception's must. */
    std::runtime_error what_;
};

namespace detail {
inline void check(redislock_err e)
{
    if (e != REDISLOCK_OK)
        throw error(e);
}
} // namespace detail

using std::chrono::milliseconds;

/* Waits for as long as it takes (REDISLOCK_WAIT_FOREVER). */
inline constexpr milliseconds wait_forever{REDISLOCK_WAIT_FOREVER};

/* redislock_acquire_options with durations; zero means the default, as
 * in C (a TTL of 30 s; a wait of 0 tries once). raw() gives the C struct
 * for the options this leaves out. */
struct acquire_options {
    milliseconds ttl{0};
    milliseconds wait{0};
    bool watchdog = false;
    bool fair = false;
    bool fail_fast = false;
    milliseconds lock_delay{0};

    redislock_acquire_options raw() const noexcept
    {
        redislock_acquire_options o{};

        o.ttl_ms = ttl.count();
        o.wait_ms = wait.count();
        o.watchdog = watchdog;
        o.fair = fair;
        o.fail_fast = fail_fast;
        o.lock_delay_ms = lock_delay.count();
        return o;
    }
};

/* A client (redislock_client): one server, several sharded, a Redis
 * Cluster or a Redlock quorum. Move-only; freed with the object, which
 * must outlive its locks. */
class client {
  public:
    explicit client(const std::string &url,
                    const redislock_options *o = nullptr)
    {
        detail::check(redislock_client_new(&c_, url.c_str(), o));
    }
    static client sharded(const std::vector<std::string> &urls,
                          const redislock_options *o = nullptr)
    {
        return make(redislock_client_new_sharded_sized, urls, o);
    }
    static client cluster(const std::vector<std::string> &seeds,
                          const redislock_options *o = nullptr)
    {
        return make(redislock_client_new_cluster_sized, seeds, o);
    }
    static client redlock(const std::vector<std::string> &urls,
                          const redislock_options *o = nullptr)
    {
        return make(redislock_client_new_redlock_sized, urls, o);
    }
    client(client &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    client &operator=(client &&o) noexcept
    {
        if (this != &o) {
            redislock_client_free(c_);
            c_ = std::exchange(o.c_, nullptr);
        }
        return *this;
    }
    client(const client &) = delete;
    client &operator=(const client &) = delete;
    ~client() { redislock_client_free(c_); }
    redislock_client *get() const noexcept { return c_; }

  private:
    explicit client(redislock_client *c) noexcept : c_(c) {}
    /* A constructor of several servers' clients (the _sized names: the
     * header's options size goes with them, as the C macros pass it). */
    using maker = redislock_err (*)(redislock_client **, const char *const *,
                                    size_t, const redislock_options *,
                                    size_t);
    static client make(maker fn, const std::vector<std::string> &urls,
                       const redislock_options *o)
    {
        std::vector<const char *> u;
        redislock_client *c = nullptr;

        for (const auto &s : urls)
            u.push_back(s.c_str());
        detail::check(fn(&c, u.data(), u.size(), o, REDISLOCK_OPTIONS_SIZE));
        return client(c);
    }
    redislock_client *c_ = nullptr;
};

/* A lock handle (redislock_lock) for a key, or for a set of keys taken
 * all or none. Move-only; freeing it releases nothing (see the guards). */
class lock {
  public:
    lock(client &c, std::string_view key)
    {
        detail::check(redislock_lock_new(c.get(), key.data(), key.size(), &l_));
    }
    lock(client &c, std::initializer_list<std::string_view> keys)
    {
        std::vector<const void *> k;
        std::vector<size_t> n;

        for (auto s : keys) {
            k.push_back(s.data());
            n.push_back(s.size());
        }
        detail::check(
            redislock_lock_new_multi(c.get(), k.data(), n.data(), k.size(), &l_));
    }
    lock(lock &&o) noexcept : l_(std::exchange(o.l_, nullptr)) {}
    lock &operator=(lock &&o) noexcept
    {
        if (this != &o) {
            redislock_lock_free(l_);
            l_ = std::exchange(o.l_, nullptr);
        }
        return *this;
    }
    lock(const lock &) = delete;
    lock &operator=(const lock &) = delete;
    ~lock() { redislock_lock_free(l_); }

    /* Takes it with the C options; throws error, REDISLOCK_EHELD too. */
    void acquire(const redislock_acquire_options &o)
    {
        detail::check(redislock_acquire(l_, &o));
    }
    void acquire(const acquire_options &o = {}) { acquire(o.raw()); }
    /* Takes it, or returns false when another holder keeps it (EHELD);
     * throws other errors. */
    bool try_acquire(const redislock_acquire_options &o)
    {
        std::error_code ec;

        if (try_acquire(o, ec))
            return true;
        if (ec.value() != REDISLOCK_EHELD)
            throw error(static_cast<redislock_err>(ec.value()));
        return false;
    }
    bool try_acquire(const acquire_options &o = {})
    {
        return try_acquire(o.raw());
    }
    bool try_acquire(const redislock_acquire_options &o,
                     std::error_code &ec) noexcept
    {
        ec = make_error_code(redislock_acquire(l_, &o));
        return !ec;
    }
    void release() { detail::check(redislock_release(l_)); }
    void release(std::error_code &ec) noexcept
    {
        ec = make_error_code(redislock_release(l_));
    }
    void extend(milliseconds ttl)
    {
        detail::check(redislock_extend(l_, ttl.count()));
    }
    /* Whether the handle still counts on its lease (redislock_check). */
    bool valid() const noexcept { return redislock_check(l_) == REDISLOCK_OK; }
    milliseconds valid_for() const noexcept
    {
        return milliseconds(redislock_valid_ms(l_));
    }
    std::int64_t fence() const noexcept { return redislock_fence(l_); }
    bool held() const noexcept { return redislock_holds(l_) > 0; }
    std::string token() const
    {
        const char *t = redislock_token(l_);
        return t ? t : "";
    }
    redislock_lock *get() const noexcept { return l_; }

  private:
    redislock_lock *l_ = nullptr;
};

/* A lock as the C++ standard's TimedLockable, for std::lock_guard,
 * std::unique_lock, std::scoped_lock and std::lock. Each call acquires
 * with the options given here but for their wait: lock() waits without
 * a deadline, try_lock() tries once, try_lock_for() and try_lock_until()
 * wait until then. (lock cannot be one itself: a member named lock()
 * would be its constructor.) It refers to the lock, which must outlive
 * it, and is neither copied nor moved, as a mutex is not. One owner per
 * handle: threads exclude each other through the key, each with a lock
 * and a lockable of its own. */
class lockable {
  public:
    explicit lockable(redislock::lock &l,
                      const acquire_options &o = {}) noexcept
        : lockable(l, o.raw())
    {
    }
    /* With the C options, for those acquire_options leaves out
     * (reentrant: each lock() a hold, each unlock() one back); its
     * strings must outlive the lockable. */
    lockable(redislock::lock &l, const redislock_acquire_options &o) noexcept
        : l_(&l), o_(o)
    {
    }
    lockable(const lockable &) = delete;
    lockable &operator=(const lockable &) = delete;

    /* Takes the lock, however long the wait; throws error otherwise: a
     * failed request (the wait does not retry it), redislock_cancel()
     * (REDISLOCK_ECANCELED), an end the options put to the wait
     * (REDISLOCK_EHELD). */
    void lock() { l_->acquire(with(REDISLOCK_WAIT_FOREVER)); }
    /* Takes it, or returns false when another owner holds it; throws
     * other errors. try_lock() makes one attempt; the others wait up to
     * a time (rounded up to a millisecond), the clock read once. */
    bool try_lock() { return l_->try_acquire(with(REDISLOCK_NO_WAIT)); }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d)
    {
        return l_->try_acquire(with(wait_ms(d)));
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t)
    {
        const auto now = Clock::now();

        if (t <= now)
            return try_lock();
        return try_lock_for(t - now);
    }
    /* Gives it back, never throwing (std::lock_guard calls it from its
     * destructor, where an exception ends the program). */
    void unlock() noexcept { l_->release(err_); }
    /* What the last unlock() found: nothing, REDISLOCK_EEXPIRED (the
     * lease had run out, so the lock was not held to the end),
     * REDISLOCK_ELOST (another owner has it), or a failed request,
     * after which the handle keeps its token: release() it again. */
    std::error_code unlock_error() const noexcept { return err_; }

  private:
    redislock_acquire_options with(std::int64_t wait) const noexcept
    {
        redislock_acquire_options o = o_;

        o.wait_ms = wait;
        return o;
    }
    /* Compared as double first, so that a huge duration (hours::max())
     * does not overflow: it waits milliseconds::max(), without end. */
    template <class Rep, class Period>
    static std::int64_t wait_ms(const std::chrono::duration<Rep, Period> &d)
    {
        const std::chrono::duration<double, std::milli> f = d;

        if (!(f.count() > 0))
            return REDISLOCK_NO_WAIT;
        if (f >= milliseconds::max())
            return milliseconds::max().count();
        return std::chrono::ceil<milliseconds>(f).count();
    }
    redislock::lock *l_;
    redislock_acquire_options o_;
    std::error_code err_;
};

/* A guard: takes the lock (as the kind says) when made, throwing error
 * when it cannot (REDISLOCK_EHELD once the wait runs out), and gives it
 * back when it goes. Move-only. */
class guard {
  public:
    guard(guard &&o) noexcept : l_(std::exchange(o.l_, nullptr)) {}
    guard &operator=(guard &&o) noexcept
    {
        if (this != &o) {
            drop();
            l_ = std::exchange(o.l_, nullptr);
        }
        return *this;
    }
    guard(const guard &) = delete;
    guard &operator=(const guard &) = delete;
    ~guard() { drop(); }
    /* Gives it back now, throwing error when the release fails (an
     * expired lease: REDISLOCK_EEXPIRED); the guard then holds nothing. */
    void release() { std::exchange(l_, nullptr)->release(); }
    lock &held_lock() const noexcept { return *l_; }

  protected:
    guard(lock &l, const redislock_acquire_options &o) : l_(&l)
    {
        l.acquire(o);
    }

  private:
    void drop() noexcept
    {
        std::error_code ec;

        if (l_ != nullptr)
            std::exchange(l_, nullptr)->release(ec);
    }
    lock *l_ = nullptr;
};

/* The lock alone (or a set of keys: a lock made with several). */
class unique_guard : public guard {
  public:
    explicit unique_guard(lock &l, const acquire_options &o = {})
        : guard(l, o.raw())
    {
    }
};

/* A share of a lock held shared (a reader). */
class shared_guard : public guard {
  public:
    explicit shared_guard(lock &l, const acquire_options &o = {})
        : guard(l, with(o))
    {
    }

  private:
    static redislock_acquire_options with(const acquire_options &o)
    {
        redislock_acquire_options r = o.raw();

        r.shared = 1;
        return r;
    }
};

/* A permit of a counting semaphore of limit holders. */
class permit_guard : public guard {
  public:
    permit_guard(lock &l, int limit, const acquire_options &o = {})
        : guard(l, with(o, limit))
    {
    }

  private:
    static redislock_acquire_options with(const acquire_options &o, int limit)
    {
        redislock_acquire_options r = o.raw();

        r.limit = limit;
        return r;
    }
};

} // namespace redislock

#endif /* C++17 */
#endif
