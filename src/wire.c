/* wire.c - messages between a job's processes without MPI (see wire.h). */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define WIRE_MAGIC 0x64647077u /* "ddpw" */

/* What leads every message. */
struct frame {
    uint32_t magic;
    int32_t chan, tag;
    uint32_t len;
};

/* A worker's word on joining, and process 0's answer (ok, or why not). */
struct hello {
    uint32_t magic;
    int32_t rank, size;
    uint32_t pad;
    uint64_t nonce;
};
struct answer {
    uint32_t magic;
    int32_t ok;   /* WIRE_ANSWER_* */
    int32_t size; /* the job's, as process 0 has it */
    uint32_t pad;
};

_Static_assert(sizeof(struct frame) == WIRE_FRAME_BYTES, "wire.h's frame size");
_Static_assert(sizeof(struct hello) == WIRE_HELLO_BYTES, "wire.h's hello size");
_Static_assert(sizeof(struct answer) == WIRE_ANSWER_BYTES, "wire.h's answer size");

int wire_decode_frame(const void *b, size_t n, int *chan, int *tag, uint32_t *len)
{
    struct frame f;
    if (n != sizeof(f))
        return -1;
    memcpy(&f, b, sizeof(f));
    if (f.magic != WIRE_MAGIC || f.chan < 0 || f.tag < 0 || f.len > WIRE_MAX_LEN)
        return -1;
    *chan = f.chan;
    *tag = f.tag;
    *len = f.len;
    return 0;
}

int wire_decode_hello(const void *b, size_t n, int *rank, int *size, uint64_t *nonce)
{
    struct hello h;
    if (n != sizeof(h))
        return -1;
    memcpy(&h, b, sizeof(h));
    if (h.magic != WIRE_MAGIC)
        return -1;
    *rank = h.rank;
    *size = h.size;
    *nonce = h.nonce;
    return 0;
}

int wire_decode_answer(const void *b, size_t n, int *ok, int *size)
{
    struct answer a;
    if (n != sizeof(a))
        return -1;
    memcpy(&a, b, sizeof(a));
    if (a.magic != WIRE_MAGIC || a.ok < WIRE_ANSWER_MISFIT || a.ok > WIRE_ANSWER_TAKEN || a.size < 1)
        return -1;
    *ok = a.ok;
    *size = a.size;
    return 0;
}

struct queued {
    struct wire_msg m;
    struct queued *next;
};

struct peer {
    int fd;
    _Atomic int alive;
    pthread_mutex_t send_mx;
    /* the message being read */
    struct frame hdr; /* as read */
    int chan, tag;    /* as checked (wire_decode_frame) */
    uint32_t len;
    size_t hgot, bgot;
    unsigned char *body; /* NULL once the frame is read: its bytes wait for room (held) */
    size_t queued;       /* bytes of its messages queued, not taken (under the wire's mx) */
    _Atomic int held;    /* its next message waits for its queue to shrink */
};

struct wire {
    int rank, size;
    double timeout_s;
    struct peer *peers;  /* [size]: process 0 holds 1..size-1, a worker 0 */
    int wake[2];         /* a word to the reading thread: look again, or (closing) stop */
    _Atomic int closing; /* wire_close */
    pthread_t rx;
    int rx_started;
    pthread_mutex_t mx; /* the queue, each peer's queued, the retired channels */
    pthread_cond_t cv;
    struct queued *head, *tail;
    int *retired; /* channels whose messages are let go as they come (wire_retire) */
    int nretired, retired_cap;
};

/* Reads or writes all n bytes of fd before deadline (ms on probe_deadline_ms's
 * clock); 0, or -1 (closed, failed, or late). */
static int full_io(int fd, void *buf, size_t n, int writing, int64_t deadline)
{
    unsigned char *p = buf;
    while (n > 0) {
        int64_t left = deadline - probe_deadline_ms();
        if (left <= 0)
            return -1;
        struct pollfd pf = {fd, (short)(writing ? POLLOUT : POLLIN), 0};
        int k = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
        if (k < 0 && errno != EINTR)
            return -1;
        if (k <= 0)
            continue;
        ssize_t got = writing ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK))
            return -1;
        if (got > 0) {
            p += got;
            n -= (size_t)got;
        }
    }
    return 0;
}

/* ---- the meeting -------------------------------------------------------- */

/* dir must be a folder this user owns and no one else can write: the
 * address in it says where this job's records and runs go. */
static int check_dir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "rendezvous %s: not a folder", dir);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "rendezvous %s: this folder is owned by another user (uid %u; it must be yours alone: the job's "
                 "address is kept there)",
                 dir, (unsigned)st.st_uid);
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen,
                 "rendezvous %s: another user can write this folder (mode %04o; it must be yours alone: the job's "
                 "address is kept there)",
                 dir, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

static void addr_path(char *out, size_t n, const char *dir, const char *job)
{
    snprintf(out, n, "%s/ddptop-%s.addr", dir, job);
}

/* Process 0: listens at the IPv4 address ip (network order), at *port,
 * or when it is 0 at a port the system picks (put in *port). */
static int listen_at(uint32_t ip, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int one = 1; /* (an earlier job's connections may linger on the port) */
    if (*port > 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*port), .sin_addr.s_addr = ip};
    socklen_t len = sizeof(a);
    /* (a long backlog: a burst of connections that say nothing does not
     * leave a worker's unanswered while they are taken) */
    if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Where process 0 listens: bind, an IPv4 address, or by default loopback
 * (`loop`) or every interface. 0 with *ip, or -1 with err set. */
static int bind_address(const char *bind, int loop, uint32_t *ip, char *err, size_t errlen)
{
    struct in_addr a;
    if (!bind || !bind[0]) {
        *ip = htonl(loop ? INADDR_LOOPBACK : INADDR_ANY);
        return 0;
    }
    if (inet_pton(AF_INET, bind, &a) != 1) {
        snprintf(err, errlen,
                 "rendezvous: DDPTOP_RENDEZVOUS_BIND=%.100s: expected an IPv4 address of this machine (0.0.0.0: "
                 "every interface)",
                 bind);
        return -1;
    }
    *ip = a.s_addr;
    return 0;
}

/* "localhost" or an address 127.x.y.z: this machine alone. */
static int is_loopback(const char *host)
{
    struct in_addr a;
    if (!strcmp(host, "localhost"))
        return 1;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/* Writes "HOST PORT NONCE" to the meeting's file, whole or not at all
 * (a temporary file renamed into place): HOST the address process 0
 * listens at, ip, or where that is every interface its host name. */
static int publish(const char *path, uint32_t ip, int port, uint64_t nonce, char *err, size_t errlen)
{
    char host[256], tmp[4200];
    if (ip != htonl(INADDR_ANY))
        inet_ntop(AF_INET, &ip, host, sizeof(host));
    else if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = 0;
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "rendezvous: cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    char line[400];
    int n = snprintf(line, sizeof(line), "%s %d %llu\n", host, port, (unsigned long long)nonce);
    int ok = write(fd, line, (size_t)n) == n;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "rendezvous: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* A worker: process 0's address from the meeting's file; 0, or -1 while
 * there is none (yet). */
static int read_addr(const char *path, char *host, size_t hn, int *port, uint64_t *nonce)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    char line[400];
    ssize_t n = read(fd, line, sizeof(line) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    line[n] = 0;
    char h[256];
    unsigned long long v;
    if (sscanf(line, "%255s %d %llu", h, port, &v) != 3 || *port <= 0 || *port > 65535)
        return -1;
    snprintf(host, hn, "%s", h);
    *nonce = v;
    return 0;
}

#define CONNECT_LOOK_MS 200

/* A connection to host:port; -1 (errno: why), or -2 when host's name
 * did not resolve (*gai: getaddrinfo's word). loopback: a name that does
 * not resolve is this machine (a host name published in the folder, on a
 * machine whose name is in no table). */
static int connect_to(const char *host, int port, int loopback, int64_t deadline, int *gai)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0 && loopback)
        rc = getaddrinfo("127.0.0.1", ps, &hints, &res);
    if (rc != 0) {
        *gai = rc;
        return -2;
    }
    /* each try waits for an answer until the deadline, not the system's
     * two minutes (a host that drops the packets answers never) */
    int fd = -1, why = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        why = 0;
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0)
            continue;
        int c = connect(fd, a->ai_addr, a->ai_addrlen);
        if (c != 0 && errno == EINPROGRESS) {
            /* the answer is waited for at least CONNECT_LOOK_MS, the
             * deadline passed or not: a port that refuses says so within
             * a round trip, and a try with no time to hear it would call
             * the refusal a timeout */
            int64_t left = deadline - probe_deadline_ms();
            int wait = left > 2000 ? 2000 : left > CONNECT_LOOK_MS ? (int)left : CONNECT_LOOK_MS;
            struct pollfd pf = {fd, POLLOUT, 0};
            socklen_t n = sizeof(why);
            int k = poll(&pf, 1, wait);
            if (k == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &why, &n) == 0)
                c = why == 0 ? 0 : -1;
            else
                why = k == 0 ? ETIMEDOUT : errno;
        } else if (c != 0) {
            why = errno;
        }
        if (c != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        errno = why ? why : ECONNREFUSED;
    return fd;
}

static void tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* the clock's pings */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* A connection process 0 took that has not said its hello yet. */
struct pending {
    int fd;
    int64_t by; /* its time to say it, on probe_deadline_ms's clock */
    size_t got;
    unsigned char hello[WIRE_HELLO_BYTES];
};

#define HELLO_MS 3000   /* a connection's time to say its hello */
#define PENDING_MAX 256 /* connections waiting to say it, at most: the oldest goes first */
#define ANSWER_MS 1000  /* (16 bytes into a new connection's empty buffer) */

static void forget(struct pending *pend, int *n, int i, int close_it)
{
    if (close_it)
        close(pend[i].fd);
    pend[i] = pend[--*n];
}

/* A whole hello from a connection: the job's key, or it is closed without
 * a word (a worker of an earlier job in a folder, which reads the address
 * again; at an address a process with another key, counted in
 * *strangers); a rank of the job not yet taken joins, and any other is
 * answered why not. 1 when the connection joined. */
static int hello_said(struct wire *w, int fd, const unsigned char *b, uint64_t nonce, int *strangers, int *twice)
{
    int rank = -1, size = 0;
    uint64_t key = 0;
    int ours = wire_decode_hello(b, WIRE_HELLO_BYTES, &rank, &size, &key) == 0;
    if (!ours || key != nonce) {
        *strangers += ours;
        close(fd);
        return 0;
    }
    int fits = size == w->size && rank > 0 && rank < w->size, taken = fits && w->peers[rank].fd >= 0;
    struct answer a = {.magic = WIRE_MAGIC,
                       .ok = !fits   ? WIRE_ANSWER_MISFIT
                             : taken ? WIRE_ANSWER_TAKEN
                                     : WIRE_ANSWER_OK,
                       .size = w->size};
    *twice += taken;
    if (full_io(fd, &a, sizeof(a), 1, probe_deadline_ms() + ANSWER_MS) != 0 || a.ok != WIRE_ANSWER_OK) {
        close(fd);
        return 0;
    }
    w->peers[rank].fd = fd;
    atomic_store(&w->peers[rank].alive, 1);
    return 1;
}

/* Process 0: every worker's connection, each saying its rank. Every
 * connection is read as its bytes come, at most a hello's worth, and
 * dropped when it has not said it within HELLO_MS, so that none holds up
 * the others. */
static int gather_workers(struct wire *w, int lfd, uint64_t nonce, int at_address, int64_t deadline, char *err,
                          size_t errlen)
{
    struct pending *pend = calloc(PENDING_MAX, sizeof(*pend));
    struct pollfd *pf = calloc(PENDING_MAX + 1, sizeof(*pf));
    int npend = 0, joined = 0, strangers = 0, twice = 0;
    if (!pend || !pf) {
        free(pend);
        free(pf);
        snprintf(err, errlen, "rendezvous: out of memory");
        return -1;
    }
    while (joined < w->size - 1) {
        int64_t now = probe_deadline_ms(), wake = deadline;
        if (now >= deadline)
            break;
        for (int i = npend - 1; i >= 0; i--)
            if (pend[i].by <= now)
                forget(pend, &npend, i, 1);
        pf[0] = (struct pollfd){lfd, POLLIN, 0};
        for (int i = 0; i < npend; i++) {
            pf[i + 1] = (struct pollfd){pend[i].fd, POLLIN, 0};
            wake = pend[i].by < wake ? pend[i].by : wake;
        }
        int k = poll(pf, (nfds_t)npend + 1, wake - now > 1000 ? 1000 : (int)(wake - now) + 1);
        if (k < 0 && errno != EINTR)
            break;
        if (k <= 0)
            continue;
        /* (from the last: forget moves the last entry into the one it drops) */
        for (int i = npend - 1; i >= 0; i--) {
            if (!pf[i + 1].revents)
                continue;
            struct pending *c = &pend[i];
            ssize_t got = recv(c->fd, c->hello + c->got, sizeof(c->hello) - c->got, 0);
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                continue;
            if (got <= 0) {
                forget(pend, &npend, i, 1);
                continue;
            }
            c->got += (size_t)got;
            if (c->got < sizeof(c->hello))
                continue;
            joined += hello_said(w, c->fd, c->hello, nonce, &strangers, &twice);
            forget(pend, &npend, i, 0);
        }
        if (!(pf[0].revents & POLLIN))
            continue;
        for (int n = 0; n < PENDING_MAX; n++) {
            int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0)
                break;
            tune(fd);
            if (npend == PENDING_MAX) { /* the oldest makes room */
                int old = 0;
                for (int i = 1; i < npend; i++)
                    old = pend[i].by < pend[old].by ? i : old;
                forget(pend, &npend, old, 1);
            }
            pend[npend++] = (struct pending){.fd = fd, .by = probe_deadline_ms() + HELLO_MS};
        }
    }
    for (int i = 0; i < npend; i++)
        close(pend[i].fd);
    free(pend);
    free(pf);
    if (joined == w->size - 1)
        return 0;
    strangers *= at_address; /* (in a folder: an earlier job's workers, not another key) */
    char missing[200] = "";
    size_t at = 0;
    for (int p = 1; p < w->size && at + 16 < sizeof(missing); p++)
        if (w->peers[p].fd < 0)
            at += (size_t)snprintf(missing + at, sizeof(missing) - at, "%s%d", at ? ", " : "", p);
    snprintf(err, errlen, "rendezvous: process%s %s of %d did not come within %.3g s%s%s",
             w->size - 1 - joined > 1 ? "es" : "", missing, w->size, w->timeout_s,
             strangers ? " (a process with another job key, DDPTOP_JOB_KEY, was turned away)" : "",
             twice ? " (a second process of a rank already here was turned away: RANK must differ)" : "");
    return -1;
}

/* Where a worker finds process 0: the meeting's file in a folder (read
 * again while it is absent or an earlier job's), or a fixed address. */
struct meet {
    const char *path; /* the folder's file, or NULL: */
    const char *host;
    int port;
    uint64_t key;
};

/* A worker: connects to process 0 and says its rank. A connection closed
 * without an answer (process 0 does that to a hello without its key, and
 * to one it had no time to read) is tried again until the deadline. */
static int join_zero(struct wire *w, const struct meet *at, int64_t deadline, char *err, size_t errlen)
{
    char why[300] = "", where[300] = "";
    int unanswered = 0;
    for (;;) {
        char host[256];
        int port = at->port;
        uint64_t nonce = at->key;
        int have = 1;
        if (at->path)
            have = read_addr(at->path, host, sizeof(host), &port, &nonce) == 0;
        else
            snprintf(host, sizeof(host), "%s", at->host);
        if (have)
            snprintf(where, sizeof(where), "%.100s:%d", host, port);
        /* a name that does not resolve yet may (a service whose address
         * comes when its process starts): tried again until the deadline */
        int gai = 0;
        int fd = have ? connect_to(host, port, at->path != NULL, deadline, &gai) : -1;
        if (fd == -2)
            snprintf(why, sizeof(why), ": %.60s is not a host name known here (%.60s)", host, gai_strerror(gai));
        else if (fd < 0 && have)
            snprintf(why, sizeof(why), ": %.100s", strerror(errno));
        if (fd >= 0) {
            tune(fd);
            struct hello h = {.magic = WIRE_MAGIC, .rank = w->rank, .size = w->size, .nonce = nonce};
            struct answer a;
            int a_ok = -1, a_size = 0;
            if (full_io(fd, &h, sizeof(h), 1, deadline) == 0 && full_io(fd, &a, sizeof(a), 0, deadline) == 0 &&
                wire_decode_answer(&a, sizeof(a), &a_ok, &a_size) == 0) {
                if (a_ok == WIRE_ANSWER_MISFIT) {
                    snprintf(err, errlen, "rendezvous: process 0 refused rank %d of %d (its job has %d processes)",
                             w->rank, w->size, a_size);
                    close(fd);
                    return -1;
                }
                if (a_ok == WIRE_ANSWER_TAKEN) {
                    snprintf(err, errlen,
                             "rendezvous: process 0 has a rank %d already: another process was started with RANK=%d "
                             "(each process needs its own RANK)",
                             w->rank, w->rank);
                    close(fd);
                    return -1;
                }
                if (a_ok == WIRE_ANSWER_OK) {
                    w->peers[0].fd = fd;
                    atomic_store(&w->peers[0].alive, 1);
                    return 0;
                }
            } else {
                unanswered++;
            }
            close(fd);
        }
        /* (an answer withheld says more than a refusal after it: process
         * 0 may stop listening meanwhile) */
        if (unanswered)
            snprintf(why, sizeof(why), ": it closed this process's connection without an answer (%d time%s)%s",
                     unanswered, unanswered > 1 ? "s" : "",
                     at->path ? ""
                              : ": a process of another job, or one with another job key (DDPTOP_JOB_KEY must be "
                                "the same in every process)");
        if (probe_deadline_ms() >= deadline) {
            if (at->path && !where[0])
                snprintf(err, errlen, "rendezvous: process 0 did not come within %.3g s (no address in %s)",
                         w->timeout_s, at->path);
            else if (at->path)
                snprintf(err, errlen, "rendezvous: process 0 did not come within %.3g s at %s (its address in %s)%s%s",
                         w->timeout_s, where, at->path, why,
                         !strncmp(where, "127.", 4)
                             ? " (process 0 listens on loopback, for a job of one machine: across machines start "
                               "it with DDPTOP_RENDEZVOUS_BIND)"
                             : "");
            else
                snprintf(err, errlen, "rendezvous: process 0 did not come within %.3g s at %s:%d%s", w->timeout_s,
                         at->host, at->port, why);
            return -1;
        }
        probe_nap_ms(50);
    }
}

/* ---- reading ------------------------------------------------------------ */

static void lost(struct wire *w, struct peer *p)
{
    pthread_mutex_lock(&w->mx);
    atomic_store(&p->alive, 0);
    free(p->body);
    p->body = NULL;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mx);
}

static int retired(const struct wire *w, int chan)
{
    for (int i = 0; i < w->nretired; i++)
        if (w->retired[i] == chan)
            return 1;
    return 0;
}

/* Whether p's next message (its frame read) may be read now: its queue
 * has room for it, or holds nothing (a longer message comes alone). */
static int room_for(struct wire *w, const struct peer *p)
{
    pthread_mutex_lock(&w->mx);
    int ok = p->queued == 0 || p->queued + p->len <= WIRE_QUEUE_MAX;
    pthread_mutex_unlock(&w->mx);
    return ok;
}

/* Reads what src's connection holds now, until its queue is full (held);
 * -1 once it is gone. */
static int read_some(struct wire *w, int src)
{
    struct peer *p = &w->peers[src];
    for (;;) {
        if (p->hgot == sizeof(p->hdr) && !p->body) {
            if (!room_for(w, p)) {
                atomic_store(&p->held, 1);
                return 0;
            }
            atomic_store(&p->held, 0);
            if (!(p->body = malloc(p->len ? p->len : 1)))
                return -1;
            p->bgot = 0;
        }
        void *at;
        size_t want;
        if (p->hgot < sizeof(p->hdr)) {
            at = (unsigned char *)&p->hdr + p->hgot;
            want = sizeof(p->hdr) - p->hgot;
        } else {
            at = p->body + p->bgot;
            want = p->len - p->bgot;
        }
        ssize_t got = want ? recv(p->fd, at, want, 0) : 0;
        if (want && got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (want && got <= 0)
            return -1;
        if (p->hgot < sizeof(p->hdr)) {
            p->hgot += (size_t)got;
            if (p->hgot == sizeof(p->hdr) &&
                wire_decode_frame(&p->hdr, sizeof(p->hdr), &p->chan, &p->tag, &p->len) != 0)
                return -1; /* not our framing: the connection is no use */
            continue;
        }
        p->bgot += (size_t)got;
        if (p->bgot < p->len)
            continue;
        struct queued *q = malloc(sizeof(*q));
        if (!q)
            return -1;
        q->m = (struct wire_msg){.src = src, .chan = p->chan, .tag = p->tag, .len = p->len, .data = p->body};
        q->next = NULL;
        p->body = NULL;
        p->hgot = 0;
        pthread_mutex_lock(&w->mx);
        if (retired(w, q->m.chan)) {
            free(q->m.data);
            free(q);
        } else {
            if (w->tail)
                w->tail->next = q;
            else
                w->head = q;
            w->tail = q;
            p->queued += q->m.len;
            pthread_cond_broadcast(&w->cv);
        }
        pthread_mutex_unlock(&w->mx);
    }
}

/* A message of src's left the queue (taken or dropped; under w->mx): a
 * connection held for room is read again. */
static void unqueued(struct wire *w, int src, size_t len)
{
    struct peer *p = &w->peers[src];
    p->queued -= len;
    if (atomic_load(&p->held) && write(w->wake[1], "r", 1) != 1) {
        /* (the pipe is full: the reading thread has a word to read already) */
    }
}

static void *receive(void *arg)
{
    struct wire *w = arg;
    struct pollfd *pf = calloc((size_t)w->size + 1, sizeof(*pf));
    int *who = calloc((size_t)w->size + 1, sizeof(*who));
    while (pf && who && !atomic_load(&w->closing)) {
        int n = 0;
        pf[n++] = (struct pollfd){w->wake[0], POLLIN, 0};
        for (int p = 0; p < w->size; p++) {
            if (!atomic_load(&w->peers[p].alive))
                continue;
            /* (a connection held for room is not read; a taker's word wakes this) */
            if (atomic_load(&w->peers[p].held)) {
                if (read_some(w, p) != 0)
                    lost(w, &w->peers[p]);
                if (atomic_load(&w->peers[p].held) || !atomic_load(&w->peers[p].alive))
                    continue;
            }
            who[n] = p;
            pf[n++] = (struct pollfd){w->peers[p].fd, POLLIN, 0};
        }
        if (poll(pf, (nfds_t)n, -1) < 0 && errno != EINTR)
            break;
        if (pf[0].revents) {
            char words[64];
            while (read(w->wake[0], words, sizeof(words)) > 0) {
            }
            continue; /* (wire_close, or room for a connection held) */
        }
        for (int i = 1; i < n; i++)
            if (pf[i].revents && read_some(w, who[i]) != 0)
                lost(w, &w->peers[who[i]]);
    }
    free(pf);
    free(who);
    return NULL;
}

/* ---- the interface ------------------------------------------------------ */

/* The meeting, as process rank of size: a folder's (dir and job set) or
 * an address's (host and port); process 0 listening at bind (wire.h). */
static struct wire *open_at(const char *dir, const char *job, const char *host, int port, uint64_t key, int rank,
                            int size, double timeout_s, const char *bind, char *err, size_t errlen)
{
    if (size < 1 || rank < 0 || rank >= size) {
        snprintf(err, errlen, "rendezvous: rank %d of %d processes", rank, size);
        return NULL;
    }
    uint32_t ip = 0;
    if (dir && check_dir(dir, err, errlen) != 0)
        return NULL;
    if (rank == 0 && bind_address(bind, dir || is_loopback(host), &ip, err, errlen) != 0)
        return NULL;
    struct wire *w = calloc(1, sizeof(*w));
    if (!w || !(w->peers = calloc((size_t)size, sizeof(*w->peers)))) {
        free(w);
        snprintf(err, errlen, "rendezvous: out of memory for %d processes", size);
        return NULL;
    }
    w->rank = rank;
    w->size = size;
    w->timeout_s = timeout_s;
    w->wake[0] = w->wake[1] = -1;
    pthread_mutex_init(&w->mx, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (int p = 0; p < size; p++) {
        w->peers[p].fd = -1;
        pthread_mutex_init(&w->peers[p].send_mx, NULL);
    }
    char path[4096] = "";
    if (dir)
        addr_path(path, sizeof(path), dir, job);
    struct meet at = {.path = dir ? path : NULL, .host = host, .port = port, .key = key};
    int64_t deadline = probe_deadline_ms() + (int64_t)(timeout_s * 1000);
    int rc = -1;
    if (rank == 0) {
        int lport = dir ? 0 : port;
        uint64_t nonce = key;
        int lfd = listen_at(ip, &lport);
        char addr[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &ip, addr, sizeof(addr));
        if (lfd < 0 && dir)
            snprintf(err, errlen, "rendezvous: cannot listen on a TCP port at %s: %s", addr, strerror(errno));
        else if (lfd < 0)
            snprintf(err, errlen, "rendezvous: cannot listen on port %d at %s: %s", port, addr, strerror(errno));
        else if (dir && getrandom(&nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
            snprintf(err, errlen, "rendezvous: no random number for the job's key");
        else if (!dir || publish(path, ip, lport, nonce, err, errlen) == 0) {
            rc = gather_workers(w, lfd, nonce, !dir, deadline, err, errlen);
            if (dir)
                unlink(path); /* every worker has it, or the job failed: the next job's own */
        }
        if (lfd >= 0)
            close(lfd);
    } else {
        rc = join_zero(w, &at, deadline, err, errlen);
    }
    if (rc == 0 && pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "rendezvous: no pipe: %s", strerror(errno));
        rc = -1;
    }
    if (rc == 0 && pthread_create(&w->rx, NULL, receive, w) != 0) {
        snprintf(err, errlen, "rendezvous: cannot start the receiving thread");
        rc = -1;
    }
    if (rc != 0) {
        wire_close(w);
        return NULL;
    }
    w->rx_started = 1;
    return w;
}

struct wire *wire_open(const char *dir, const char *job, int rank, int size, double timeout_s, const char *bind,
                       char *err, size_t errlen)
{
    return open_at(dir, job, NULL, 0, 0, rank, size, timeout_s, bind, err, errlen);
}

struct wire *wire_open_tcp(const char *host, int port, uint64_t key, int rank, int size, double timeout_s,
                           const char *bind, char *err, size_t errlen)
{
    if (!host || !host[0] || port < 1 || port > 65535) {
        snprintf(err, errlen, "rendezvous: tcp:%s:%d is no address", host ? host : "", port);
        return NULL;
    }
    if (key == 0) {
        snprintf(err, errlen, "rendezvous: tcp:%s:%d: no job key (DDPTOP_JOB_KEY)", host, port);
        return NULL;
    }
    return open_at(NULL, NULL, host, port, key, rank, size, timeout_s, bind, err, errlen);
}

uint64_t wire_key_of(const char *text)
{
    if (!text || !text[0])
        return 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a, 64 bits */
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h ? h : 1;
}

int wire_rank(const struct wire *w)
{
    return w->rank;
}

int wire_size(const struct wire *w)
{
    return w->size;
}

int wire_alive(struct wire *w, int p)
{
    return p >= 0 && p < w->size && atomic_load(&w->peers[p].alive);
}

int wire_send(struct wire *w, int dst, int chan, int tag, const void *buf, size_t len)
{
    if (!wire_alive(w, dst) || len > WIRE_MAX_LEN)
        return -1;
    struct peer *p = &w->peers[dst];
    struct frame f = {.magic = WIRE_MAGIC, .chan = chan, .tag = tag, .len = (uint32_t)len};
    /* a peer that reads nothing for the job's timeout is given up */
    int64_t deadline = probe_deadline_ms() + (int64_t)(w->timeout_s * 1000);
    pthread_mutex_lock(&p->send_mx);
    int rc = full_io(p->fd, &f, sizeof(f), 1, deadline);
    if (rc == 0 && len)
        rc = full_io(p->fd, (void *)buf, len, 1, deadline);
    pthread_mutex_unlock(&p->send_mx);
    if (rc != 0)
        shutdown(p->fd, SHUT_RDWR); /* (the reading thread sees it go) */
    return rc;
}

static int matches(const struct wire_msg *m, int src, int chan, int tag)
{
    return (src == WIRE_ANY || m->src == src) && m->chan == chan && (tag == WIRE_ANY || m->tag == tag);
}

int wire_take(struct wire *w, int src, int chan, int tag, int timeout_ms, struct wire_msg *m)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&w->mx);
    for (;;) {
        for (struct queued **q = &w->head, *prev = NULL; *q; prev = *q, q = &(*q)->next) {
            if (!matches(&(*q)->m, src, chan, tag))
                continue;
            struct queued *hit = *q;
            *q = hit->next;
            if (w->tail == hit)
                w->tail = prev;
            unqueued(w, hit->m.src, hit->m.len);
            pthread_mutex_unlock(&w->mx);
            *m = hit->m;
            free(hit);
            return 1;
        }
        int open = 0;
        for (int p = 0; p < w->size; p++)
            open += (src == WIRE_ANY || p == src) && atomic_load(&w->peers[p].alive);
        if (!open) {
            pthread_mutex_unlock(&w->mx);
            return -1;
        }
        if (timeout_ms == 0 || (timeout_ms > 0 ? pthread_cond_timedwait(&w->cv, &w->mx, &until)
                                               : pthread_cond_wait(&w->cv, &w->mx)) == ETIMEDOUT) {
            pthread_mutex_unlock(&w->mx);
            return 0;
        }
    }
}

void wire_drop(struct wire *w, int chan)
{
    wire_drop_tag(w, chan, WIRE_ANY);
}

void wire_drop_tag(struct wire *w, int chan, int tag)
{
    pthread_mutex_lock(&w->mx);
    struct queued **q = &w->head, *prev = NULL;
    while (*q) {
        struct queued *hit = *q;
        if (!matches(&hit->m, WIRE_ANY, chan, tag)) {
            prev = hit;
            q = &hit->next;
            continue;
        }
        *q = hit->next;
        if (w->tail == hit)
            w->tail = prev;
        unqueued(w, hit->m.src, hit->m.len);
        free(hit->m.data);
        free(hit);
    }
    pthread_mutex_unlock(&w->mx);
}

void wire_retire(struct wire *w, int chan)
{
    pthread_mutex_lock(&w->mx);
    if (!retired(w, chan) && w->nretired == w->retired_cap) {
        int cap = w->retired_cap ? 2 * w->retired_cap : 16, *more = realloc(w->retired, sizeof(int) * (size_t)cap);
        if (more) {
            w->retired = more;
            w->retired_cap = cap;
        }
    }
    if (!retired(w, chan) && w->nretired < w->retired_cap)
        w->retired[w->nretired++] = chan;
    pthread_mutex_unlock(&w->mx);
    wire_drop(w, chan);
}

void wire_close(struct wire *w)
{
    if (!w)
        return;
    for (int p = 0; p < w->size; p++)
        if (w->peers[p].fd >= 0)
            shutdown(w->peers[p].fd, SHUT_RDWR);
    if (w->rx_started) {
        atomic_store(&w->closing, 1);
        if (write(w->wake[1], "x", 1) != 1) {
            /* (the shut connections end its poll too) */
        }
        pthread_join(w->rx, NULL);
    }
    for (int p = 0; p < w->size; p++) {
        if (w->peers[p].fd >= 0)
            close(w->peers[p].fd);
        free(w->peers[p].body);
        pthread_mutex_destroy(&w->peers[p].send_mx);
    }
    for (int i = 0; i < 2; i++)
        if (w->wake[i] >= 0)
            close(w->wake[i]);
    while (w->head) {
        struct queued *q = w->head;
        w->head = q->next;
        free(q->m.data);
        free(q);
    }
    pthread_mutex_destroy(&w->mx);
    pthread_cond_destroy(&w->cv);
    free(w->retired);
    free(w->peers);
    free(w);
}
