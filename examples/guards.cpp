/*
 * guards [-u URL] [-k KEY]: redislock.hpp's guards, one scope each.
 *
 * A stock count is moved under the lock alone (unique_guard); reports
 * read it under shares (shared_guard), two at once; at most two backups
 * run at once (permit_guard); a transfer takes two keys as one set. Each
 * guard gives its lock back when its scope ends, by exception too. The
 * URL is -u, else $REDISLOCK_URL, else redis://127.0.0.1:6379; KEY
 * defaults to "example:stock".
 */
#include <redislock.hpp>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <unistd.h>

using namespace std::chrono_literals;

int main(int argc, char **argv)
{
    const char *env = std::getenv("REDISLOCK_URL");
    std::string url = env ? env : "redis://127.0.0.1:6379";
    std::string key = "example:stock";
    int c;

    while ((c = getopt(argc, argv, "u:k:")) != -1) {
        if (c == 'u')
            url = optarg;
        else if (c == 'k')
            key = optarg;
        else {
            std::cerr << "usage: guards [-u URL] [-k KEY]\n";
            return 64;
        }
    }
    try {
        redislock::client client(url);
        redislock::lock stock(client, key), other(client, key);
        redislock::acquire_options o;

        o.ttl = 10s;
        {
            redislock::unique_guard g(stock, o);
            std::cout << "unique: held"
                      << (stock.fence() > 0 ? " with a fencing token" : "")
                      << "; another: "
                      << (other.try_acquire() ? "got it" : "held") << "\n";
        }
        std::cout << "unique: released, another: "
                  << (other.try_acquire() ? "got it" : "held") << "\n";
        other.release();
        {
            redislock::shared_guard r1(stock, o), r2(other, o);
            std::cout << "shared: two readers at once\n";
        }
        {
            redislock::lock third(client, key);
            redislock::permit_guard b1(stock, 2, o), b2(other, 2, o);
            std::cout << "permits: two of 2; a third: "
                      << (third.try_acquire([] {
                             redislock_acquire_options p{};
                             p.limit = 2;
                             return p;
                         }())
                              ? "got one"
                              : "none left")
                      << "\n";
        }
        {
            redislock::lock pair(client, {key + ":a", key + ":b"});
            redislock::unique_guard g(pair, o);
            std::cout << "set: both keys held\n";
        }
        try {
            redislock::unique_guard g(stock, o);
            throw std::runtime_error("the job failed");
        } catch (const std::runtime_error &e) {
            std::cout << "exception: " << e.what() << "; lock "
                      << (stock.held() ? "still held" : "given back") << "\n";
        }
        try {
            redislock::permit_guard b(other, 2, o);
            redislock::permit_guard p(stock, 3, o);
        } catch (const redislock::error &e) {
            std::cout << "another limit: " << redislock_errname(e.value())
                      << "\n";
        }
    } catch (const redislock::error &e) {
        std::cerr << "guards: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
