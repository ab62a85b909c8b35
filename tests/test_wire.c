/* test_wire.c - messages between processes without MPI (src/wire.c), on
 * forked processes of this program meeting in a fresh folder.
 *
 * What each process sends is written here from its rank (message k of
 * rank r on channel 1 holds the text "r<r>-k<k>", tag k), so process 0
 * knows every byte it must receive without asking the code under test:
 *  - a matched take (a channel, a source, a tag) finds its message among
 *    others queued before it, and one source's messages on a channel come
 *    in the order sent;
 *  - an 8 MB message (bytes from a seed) arrives whole;
 *  - a channel dropped loses its queued messages, and only its own;
 *  - process 0's answers reach each worker;
 *  - a worker killed outright: its queued messages are still taken, then
 *    a take from it says it is gone, within a second;
 *  - a worker started before process 0, with an earlier job's address in
 *    the folder, still joins;
 *  - a process that never comes fails process 0's open after the timeout,
 *    naming it; two processes saying one rank fail it, naming the rank;
 *  - a folder another user could write is refused, and (root only: the
 *    case `other_user`) one another user owns is refused as theirs;
 *  - at an address (tcp:HOST:PORT): a worker started before process 0
 *    still joins, messages cross both ways, a worker with another job key
 *    is refused in words naming the key (and process 0 says one was
 *    turned away), a port in use fails at once, a host name known nowhere
 *    after the timeout, named, and a port that refuses after the timeout,
 *    said to refuse (not to time out). */
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "wire.h"

static char dir[256];

static void fresh_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_wire.XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void drop_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A worker's exit status says which of its checks failed (0: none). */
#define WORKER_CHECK(cond, code)                                                                                       \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            _exit(code);                                                                                               \
    } while (0)

enum { CH_DATA = 1, CH_OTHER = 2, BIG = 8 << 20 };

static unsigned char big_byte(size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

/* Worker r of the first test: 5 messages on CH_DATA, one on CH_OTHER,
 * rank 1 an 8 MB one; then process 0's answer. */
static void worker_main(int r, int size)
{
    char err[256];
    struct wire *w = wire_open(dir, "t", r, size, 20.0, err, sizeof(err));
    WORKER_CHECK(w, 10);
    /* first, on the other channel, a tag that CH_DATA uses too */
    WORKER_CHECK(wire_send(w, 0, CH_OTHER, 1, "other", 5) == 0, 11);
    for (int k = 1; k <= 5; k++) {
        char text[32];
        int n = snprintf(text, sizeof(text), "r%d-k%d", r, k);
        WORKER_CHECK(wire_send(w, 0, CH_DATA, k, text, (size_t)n) == 0, 11);
    }
    WORKER_CHECK(wire_send(w, 0, CH_OTHER, 9, &r, sizeof(r)) == 0, 12);
    if (r == 2) {
        WORKER_CHECK(wire_send(w, 0, CH_DATA, 20, "x", 1) == 0, 17);
        WORKER_CHECK(wire_send(w, 0, CH_DATA, 21, "y", 1) == 0, 17);
        WORKER_CHECK(wire_send(w, 0, CH_OTHER, 11, "z", 1) == 0, 17);
    }
    if (r == 1) {
        unsigned char *b = malloc(BIG);
        WORKER_CHECK(b, 13);
        for (size_t i = 0; i < BIG; i++)
            b[i] = big_byte(i);
        WORKER_CHECK(wire_send(w, 0, CH_OTHER, 10, b, BIG) == 0, 14);
        free(b);
    }
    struct wire_msg m;
    WORKER_CHECK(wire_take(w, 0, CH_DATA, 7, 20000, &m) == 1, 15);
    WORKER_CHECK(m.len == sizeof(int) && *(int *)m.data == 100 + r, 16);
    free(m.data);
    wire_close(w);
    _exit(0);
}

static pid_t spawn(void (*fn)(int, int), int r, int size)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        fn(r, size);
    return pid;
}

static int exit_code(pid_t pid)
{
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect_text(const struct wire_msg *m, int src, int k)
{
    char want[32];
    snprintf(want, sizeof(want), "r%d-k%d", src, k);
    assert_int_equal(m->src, src);
    assert_int_equal(m->chan, CH_DATA);
    assert_int_equal(m->tag, k);
    assert_int_equal(m->len, strlen(want));
    assert_memory_equal(m->data, want, m->len);
}

static void test_matched_and_ordered(void **state)
{
    (void)state;
    enum { SIZE = 3 };
    fresh_dir();
    pid_t kids[SIZE];
    for (int r = 1; r < SIZE; r++)
        kids[r] = spawn(worker_main, r, SIZE);
    char err[256];
    struct wire *w = wire_open(dir, "t", 0, SIZE, 20.0, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(wire_size(w), SIZE);
    struct wire_msg m;
    /* a tag from the middle of rank 2's, past its first two */
    assert_int_equal(wire_take(w, 2, CH_DATA, 3, 20000, &m), 1);
    expect_text(&m, 2, 3);
    free(m.data);
    /* the other channel: one from each rank, whatever the order */
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(wire_take(w, WIRE_ANY, CH_OTHER, 9, 20000, &m), 1);
        assert_int_equal(m.len, sizeof(int));
        assert_int_equal(*(int *)m.data, m.src);
        seen |= 1 << m.src;
        free(m.data);
    }
    assert_int_equal(seen, (1 << 1) | (1 << 2));
    /* the rest of each rank's, in the order sent (and not the message of
     * the other channel queued before them) */
    for (int r = 1; r < SIZE; r++)
        for (int k = 1; k <= 5; k++) {
            if (r == 2 && k == 3)
                continue;
            assert_int_equal(wire_take(w, r, CH_DATA, WIRE_ANY, 20000, &m), 1);
            expect_text(&m, r, k);
            free(m.data);
        }
    /* a channel dropped: its messages go, the other channel's stay.
     * Rank 2 sends tags 20 and 21 on CH_DATA, then 11 on CH_OTHER: once 11
     * is here, so are they (one connection keeps the order). */
    assert_int_equal(wire_take(w, 2, CH_OTHER, 11, 20000, &m), 1);
    free(m.data);
    wire_drop(w, CH_DATA);
    assert_int_equal(wire_take(w, WIRE_ANY, CH_DATA, WIRE_ANY, 0, &m), 0); /* nothing more */
    for (int r = 1; r < SIZE; r++) { /* (the other channel's first, still there) */
        assert_int_equal(wire_take(w, r, CH_OTHER, 1, 20000, &m), 1);
        assert_int_equal(m.len, 5);
        assert_memory_equal(m.data, "other", 5);
        free(m.data);
    }
    assert_int_equal(wire_take(w, 1, CH_OTHER, 10, 20000, &m), 1);
    assert_int_equal(m.len, BIG);
    size_t wrong = 0;
    for (size_t i = 0; i < BIG; i++)
        wrong += m.data[i] != big_byte(i);
    assert_int_equal(wrong, 0);
    free(m.data);
    for (int r = 1; r < SIZE; r++) {
        int v = 100 + r;
        assert_int_equal(wire_send(w, r, CH_DATA, 7, &v, sizeof(v)), 0);
    }
    for (int r = 1; r < SIZE; r++)
        assert_int_equal(exit_code(kids[r]), 0);
    /* both workers closed: nothing can come any more */
    double t0 = now_s();
    assert_int_equal(wire_take(w, WIRE_ANY, CH_DATA, WIRE_ANY, 5000, &m), -1);
    assert_true(now_s() - t0 < 2.0);
    wire_close(w);
    drop_dir();
}

static void worker_killed(int r, int size)
{
    char err[256];
    struct wire *w = wire_open(dir, "k", r, size, 20.0, err, sizeof(err));
    WORKER_CHECK(w, 10);
    WORKER_CHECK(wire_send(w, 0, CH_DATA, 1, "r1-k1", 5) == 0, 11);
    raise(SIGKILL);
    _exit(12);
}

static void test_killed_worker(void **state)
{
    (void)state;
    fresh_dir();
    pid_t kid = spawn(worker_killed, 1, 2);
    char err[256];
    struct wire *w = wire_open(dir, "k", 0, 2, 20.0, err, sizeof(err));
    assert_non_null(w);
    assert_int_equal(exit_code(kid), 128 + SIGKILL);
    struct wire_msg m;
    assert_int_equal(wire_take(w, 1, CH_DATA, 1, 20000, &m), 1); /* sent before it died */
    expect_text(&m, 1, 1);
    free(m.data);
    double t0 = now_s();
    assert_int_equal(wire_take(w, 1, CH_DATA, WIRE_ANY, 20000, &m), -1);
    assert_true(now_s() - t0 < 1.0);
    assert_false(wire_alive(w, 1));
    assert_int_equal(wire_send(w, 1, CH_DATA, 1, "x", 1), -1);
    wire_close(w);
    drop_dir();
}

static void worker_early(int r, int size)
{
    char err[256];
    struct wire *w = wire_open(dir, "e", r, size, 20.0, err, sizeof(err));
    WORKER_CHECK(w, 10);
    WORKER_CHECK(wire_send(w, 0, CH_DATA, 1, "r1-k1", 5) == 0, 11);
    wire_close(w);
    _exit(0);
}

static void test_stale_address(void **state)
{
    (void)state;
    fresh_dir();
    /* an earlier job's address: a port nothing listens on, a wrong key */
    char path[400];
    snprintf(path, sizeof(path), "%s/ddptop-e.addr", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "localhost 1 12345\n");
    fclose(f);
    pid_t kid = spawn(worker_early, 1, 2);
    usleep(300 * 1000); /* it reads the stale address first */
    char err[256];
    struct wire *w = wire_open(dir, "e", 0, 2, 20.0, err, sizeof(err));
    assert_non_null(w);
    struct wire_msg m;
    assert_int_equal(wire_take(w, 1, CH_DATA, 1, 20000, &m), 1);
    expect_text(&m, 1, 1);
    free(m.data);
    assert_int_equal(exit_code(kid), 0);
    wire_close(w);
    assert_int_equal(access(path, F_OK), -1); /* process 0 took its address away */
    drop_dir();
}

static void worker_lingers(int r, int size)
{
    char err[256];
    struct wire *w = wire_open(dir, "d", r, size, 3.0, err, sizeof(err));
    /* both say rank 1: one is refused; the other joined a job that failed */
    if (w)
        wire_close(w);
    _exit(0);
}

static void test_missing_and_twice(void **state)
{
    (void)state;
    fresh_dir();
    char err[256];
    /* rank 1 of 3 comes, rank 2 never does */
    pid_t kid = spawn(worker_lingers, 1, 3);
    double t0 = now_s();
    struct wire *w = wire_open(dir, "d", 0, 3, 1.5, err, sizeof(err));
    double took = now_s() - t0;
    assert_null(w);
    printf("  %s (after %.2f s)\n", err, took);
    assert_non_null(strstr(err, "process 2 of 3 did not come"));
    assert_true(took >= 1.4 && took < 5.0);
    exit_code(kid);
    /* two processes as rank 1 of 2... of 3: the second is named */
    pid_t a = spawn(worker_lingers, 1, 3), b = spawn(worker_lingers, 1, 3);
    w = wire_open(dir, "d", 0, 3, 5.0, err, sizeof(err));
    assert_null(w);
    printf("  %s\n", err);
    assert_non_null(strstr(err, "two processes say they are rank 1"));
    exit_code(a);
    exit_code(b);
    drop_dir();
}

static void test_folder_refused(void **state)
{
    (void)state;
    fresh_dir();
    char err[256];
    assert_int_equal(chmod(dir, 0777), 0);
    assert_null(wire_open(dir, "f", 0, 1, 1.0, err, sizeof(err)));
    assert_non_null(strstr(err, "another user can write"));
    assert_int_equal(chmod(dir, 0700), 0);
    struct wire *w = wire_open(dir, "f", 0, 1, 1.0, err, sizeof(err)); /* a job of one */
    assert_non_null(w);
    wire_close(w);
    char file[300];
    snprintf(file, sizeof(file), "%s/x", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    assert_null(wire_open(file, "f", 0, 1, 1.0, err, sizeof(err)));
    assert_non_null(strstr(err, "not a folder"));
    drop_dir();
}

/* A port free now: bound by the system's choice, then let go. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, len), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int tcp_port;

/* Rank 1 of 2 at the address with the job's key: says hello, answers. */
static void worker_tcp(int r, int size)
{
    char err[256];
    struct wire *w = wire_open_tcp("127.0.0.1", tcp_port, wire_key_of("job-a"), r, size, 20.0, err, sizeof(err));
    WORKER_CHECK(w, 30);
    WORKER_CHECK(wire_send(w, 0, CH_DATA, 3, "hello", 5) == 0, 31);
    struct wire_msg m;
    WORKER_CHECK(wire_take(w, 0, CH_DATA, 4, 20000, &m) == 1, 32);
    WORKER_CHECK(m.len == 3 && memcmp(m.data, "bye", 3) == 0, 33);
    free(m.data);
    wire_close(w);
    _exit(0);
}

/* A worker with another key: refused, in words naming the key. */
static void worker_tcp_stranger(int r, int size)
{
    char err[256];
    struct wire *w = wire_open_tcp("127.0.0.1", tcp_port, wire_key_of("job-b"), r, size, 20.0, err, sizeof(err));
    WORKER_CHECK(!w, 40);
    WORKER_CHECK(strstr(err, "refused this process's job key"), 41);
    WORKER_CHECK(strstr(err, "DDPTOP_JOB_KEY"), 42);
    _exit(0);
}

static void test_tcp_address(void **state)
{
    (void)state;
    char err[256];
    tcp_port = free_port();
    /* the worker first: it tries again until process 0 listens */
    pid_t kid = spawn(worker_tcp, 1, 2);
    nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL);
    struct wire *w = wire_open_tcp("127.0.0.1", tcp_port, wire_key_of("job-a"), 0, 2, 20.0, err, sizeof(err));
    assert_non_null(w);
    struct wire_msg m;
    assert_int_equal(wire_take(w, 1, CH_DATA, 3, 20000, &m), 1);
    assert_int_equal(m.len, 5);
    assert_memory_equal(m.data, "hello", 5);
    free(m.data);
    assert_int_equal(wire_send(w, 1, CH_DATA, 4, "bye", 3), 0);
    assert_int_equal(exit_code(kid), 0);
    wire_close(w);

    /* another job's key: the worker is told; process 0 says so */
    tcp_port = free_port();
    kid = spawn(worker_tcp_stranger, 1, 2);
    w = wire_open_tcp("127.0.0.1", tcp_port, wire_key_of("job-a"), 0, 2, 2.0, err, sizeof(err));
    assert_null(w);
    printf("  %s\n", err);
    assert_non_null(strstr(err, "process 1 of 2 did not come"));
    assert_non_null(strstr(err, "another job key"));
    assert_int_equal(exit_code(kid), 0);
    assert_true(wire_key_of("job-a") != wire_key_of("job-b") && wire_key_of("") == 0 && wire_key_of(NULL) == 0);

    /* a port that refuses (nothing listens on it): said to refuse, not
     * to time out, after the timeout */
    tcp_port = free_port();
    assert_null(wire_open_tcp("127.0.0.1", tcp_port, 0, 1, 2, 1.0, err, sizeof(err)));
    printf("  %s\n", err);
    assert_non_null(strstr(err, "did not come within 1 s"));
    assert_non_null(strstr(err, strerror(ECONNREFUSED)));
    assert_null(strstr(err, strerror(ETIMEDOUT)));

    /* a port in use, a host known nowhere: one line, at once */
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(busy, (struct sockaddr *)&a, len), 0);
    assert_int_equal(listen(busy, 1), 0);
    assert_int_equal(getsockname(busy, (struct sockaddr *)&a, &len), 0);
    assert_null(wire_open_tcp("127.0.0.1", ntohs(a.sin_port), 0, 0, 2, 5.0, err, sizeof(err)));
    printf("  %s\n", err);
    assert_non_null(strstr(err, "cannot listen on port"));
    close(busy);
    /* (a name may resolve later, as a service's does once its process
     * starts: it is tried until the timeout, then named) */
    double t0 = now_s();
    assert_null(wire_open_tcp("no-such-host.invalid", 1234, 0, 1, 2, 1.5, err, sizeof(err)));
    double took = now_s() - t0;
    printf("  %s (after %.2f s)\n", err, took);
    assert_non_null(strstr(err, "did not come within 1.5 s"));
    assert_non_null(strstr(err, "no-such-host.invalid is not a host name known here"));
    assert_true(took >= 1.4 && took < 10.0);
}

/* (root only: a folder given to another user) a private folder that is
 * another user's is refused as theirs, not as one others can write */
static void test_other_users_folder(void **state)
{
    (void)state;
    fresh_dir();
    char err[256];
    assert_int_equal(chmod(dir, 0700), 0);
    struct passwd *nobody = getpwnam("nobody");
    assert_non_null(nobody);
    assert_int_equal(chown(dir, nobody->pw_uid, nobody->pw_gid), 0);
    assert_null(wire_open(dir, "f", 0, 1, 1.0, err, sizeof(err)));
    printf("  %s\n", err);
    assert_non_null(strstr(err, "this folder is owned by another user"));
    assert_null(strstr(err, "can write"));
    assert_int_equal(chown(dir, getuid(), getgid()), 0);
    drop_dir();
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1) {
        if (strcmp(argv[1], "other_user") != 0) {
            fprintf(stderr, "usage: %s [other_user]\n", argv[0]);
            return 2;
        }
        if (geteuid() != 0 || !getpwnam("nobody")) {
            printf("SKIP: only root can give a folder to another user (nobody)\n");
            return 77;
        }
        const struct CMUnitTest other[] = {cmocka_unit_test(test_other_users_folder)};
        return cmocka_run_group_tests(other, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matched_and_ordered), cmocka_unit_test(test_killed_worker),
        cmocka_unit_test(test_stale_address),       cmocka_unit_test(test_missing_and_twice),
        cmocka_unit_test(test_folder_refused),      cmocka_unit_test(test_tcp_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
