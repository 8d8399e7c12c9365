#define _GNU_SOURCE
#include "CLinux.h"
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>

int tessera_name_this_thread(const char *name) { return pthread_setname_np(pthread_self(), name); }

enum { TESSERA_MAX_BATCH = 64 };

/// Points each message header at its slot's buffer and address: to fill (`receiving`: the
/// whole capacity, room for any address) or to send (the length and address given).
static void tessera_prepare(struct mmsghdr *messages, struct iovec *vectors, const struct tessera_datagram *datagrams,
                            unsigned int count, int receiving) {
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned int i = 0; i < count; i++) {
        vectors[i].iov_base = datagrams[i].buffer;
        vectors[i].iov_len = receiving ? datagrams[i].capacity : datagrams[i].length;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = (void *)&datagrams[i].address;
        messages[i].msg_hdr.msg_namelen = receiving ? sizeof(struct sockaddr_storage) : datagrams[i].address_length;
    }
}

int tessera_recv_datagrams(int fd, struct tessera_datagram *datagrams, unsigned int count) {
    if (count > TESSERA_MAX_BATCH) count = TESSERA_MAX_BATCH;
    struct mmsghdr messages[TESSERA_MAX_BATCH];
    struct iovec vectors[TESSERA_MAX_BATCH];
    tessera_prepare(messages, vectors, datagrams, count, 1);
    int received = recvmmsg(fd, messages, count, MSG_DONTWAIT, NULL);
    for (int i = 0; i < received; i++) {
        datagrams[i].length = messages[i].msg_len;
        datagrams[i].address_length = messages[i].msg_hdr.msg_namelen;
        datagrams[i].truncated = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
    }
    return received;
}

int tessera_send_datagrams(int fd, const struct tessera_datagram *datagrams, unsigned int count) {
    if (count > TESSERA_MAX_BATCH) count = TESSERA_MAX_BATCH;
    struct mmsghdr messages[TESSERA_MAX_BATCH];
    struct iovec vectors[TESSERA_MAX_BATCH];
    tessera_prepare(messages, vectors, datagrams, count, 0);
    return sendmmsg(fd, messages, count, MSG_DONTWAIT);
}
