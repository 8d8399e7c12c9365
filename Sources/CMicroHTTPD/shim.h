// libmicrohttpd: the HTTP API. MHD_start_daemon and MHD_get_daemon_info are variadic, so the
// options Tessera uses are fixed here.
#ifndef TESSERA_CMICROHTTPD_SHIM_H
#define TESSERA_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdint.h>
#include <microhttpd.h>

/// Starts a daemon bound to `addr` with a thread per connection (so a handler may wait for the
/// media loop, and an event stream may block between events without stalling other clients),
/// calling `handler` for each request and `completed` when a request ends. With `cert_pem` and
/// `key_pem` (which must outlive the daemon) it speaks HTTPS only (libmicrohttpd's GnuTLS).
static inline struct MHD_Daemon *tessera_mhd_start(const struct sockaddr *addr, MHD_AccessHandlerCallback handler,
                                                   void *handler_cls, MHD_RequestCompletedCallback completed,
                                                   void *completed_cls, unsigned int connection_limit,
                                                   unsigned int per_address_limit,
                                                   unsigned int timeout_seconds, const char *cert_pem,
                                                   const char *key_pem) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (addr->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    uint16_t port = addr->sa_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)addr)->sin6_port)
                                                : ntohs(((const struct sockaddr_in *)addr)->sin_port);
    if (cert_pem && key_pem) {
        return MHD_start_daemon(flags | MHD_USE_TLS, port, NULL, NULL, handler, handler_cls,
                                MHD_OPTION_SOCK_ADDR, addr,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                                MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
                                MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1024 * 1024),
                                MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                                MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
                                MHD_OPTION_HTTPS_MEM_KEY, key_pem,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
                            MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1024 * 1024),
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0).
static inline uint16_t tessera_mhd_bound_port(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// A response holding its own copy of `data`.
static inline struct MHD_Response *tessera_mhd_response_copying(size_t size, const void *data) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}

/// MHD_SIZE_UNKNOWN and MHD_CONTENT_READER_END_OF_STREAM are macros with casts.
static inline uint64_t tessera_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
static inline ssize_t tessera_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
#endif
