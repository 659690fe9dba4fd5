/*
 * Server names that do not depend on how a URL spells them: the name a
 * sharded client's ring hashes, so that clients spelling one server
 * differently still route every key alike, and the INFO fields that say
 * which server a connection reached. No server I/O; rl__canon_host asks
 * the resolver.
 */
#ifndef RL_CANON_H
#define RL_CANON_H

#include <stddef.h>
#include <sys/socket.h>

struct addrinfo;

/* Room for any canonical name: a host name of up to 255 bytes, a port
 * and a database. */
#define RL_CANON_MAX 300

/* The loopback host's name. 127.0.0.1, ::1 and ::ffff:127.0.0.1 are one
 * host: "localhost" resolves to both families, and a server on the
 * loopback port answers on either one it binds. */
#define RL_CANON_LOOPBACK "127.0.0.1"

/* RL_CANON_LOOPBACK into out and 1 when every address of ai is the
 * loopback host; 0 (out untouched) otherwise or for an empty list. */
int rl__canon_addrs(const struct addrinfo *ai, char *out, size_t size);

/* A host name as written, the way DNS compares it: lowercase, without a
 * trailing dot. */
void rl__canon_dns_name(const char *host, char *out, size_t size);

/*
 * The canonical host for host into out. A numeric address (any form the
 * resolver reads as one: "127.1", "[0::1]") is named by rl__canon_addr.
 * A name whose addresses are all the loopback host is that host. Any
 * other name is kept, by rl__canon_dns_name, and is not replaced by its
 * addresses: they change (a restarted container, a moved DNS record), and
 * a ring that moved with them would send a key to another server in a
 * client started after the change.
 */
void rl__canon_host(const char *host, char *out, size_t size);

/* "host:port/db", the name the ring hashes. */
void rl__canon_tcp(char *out, size_t size, const char *host, int port, int db);

/* The name of a unix socket's server: the loopback host's TCP port
 * tcp_port (from INFO) when it listens on one, so that its TCP spelling
 * names it alike; else the socket's real path (symbolic links resolved),
 * or path as given when it cannot be resolved. */
void rl__canon_unix(char *out, size_t size, const char *path, long tcp_port,
                    int db);

/* The value of field in INFO's text (lines "field:value"), into out.
 * Returns 0, or -1 when the field is absent or its value does not fit. */
int rl__canon_info_field(const char *info, size_t len, const char *field,
                         char *out, size_t size);

#endif
