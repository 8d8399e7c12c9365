// Linux system calls Swift's Glibc module does not expose: epoll, eventfd, batched UDP
// (recvmmsg/sendmmsg) and thread names (pthread_setname_np), the last two needing _GNU_SOURCE and
// so wrapped in CLinux.c.
#ifndef TESSERA_CLINUX_H
#define TESSERA_CLINUX_H
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>

/// One datagram slot for a batch: `buffer`/`capacity` are the caller's; the call fills `length`
/// and `address` when receiving and reads them when sending.
struct tessera_datagram {
    void *buffer;
    size_t capacity;
    size_t length;
    struct sockaddr_storage address;
    socklen_t address_length;
    /// Set when the datagram did not fit in `capacity` (MSG_TRUNC).
    int truncated;
};

/// recvmmsg without blocking: fills up to `count` slots; returns how many, or -1 with errno.
int tessera_recv_datagrams(int fd, struct tessera_datagram *datagrams, unsigned int count);

/// sendmmsg: sends `count` datagrams; returns how many were sent, or -1 with errno.
int tessera_send_datagrams(int fd, const struct tessera_datagram *datagrams, unsigned int count);

/// Names the calling thread (at most 15 bytes are kept); returns 0 or an errno value.
int tessera_name_this_thread(const char *name);

static inline int tessera_epoll_data_fd(const struct epoll_event *event) { return event->data.fd; }
#endif
