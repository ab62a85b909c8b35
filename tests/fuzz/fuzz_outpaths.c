/* fuzz_outpaths.c - libFuzzer target: the check that no output is an input
 * or another output (outfile_clash, trace/outfile.h), over random trees of
 * folders, files, hard links and symbolic links (dangling ones too) and
 * random lists of paths to them (relative and absolute, with ".", "..",
 * doubled and trailing slashes).
 *
 * Two oracles of its own, written apart from the checker:
 *  - identity: an output and another path clash when both resolve to one
 *    file (st_dev, st_ino, and realpath agrees), or when realpath of their
 *    folders (libgen's dirname) and their last names (libgen's basename)
 *    are the same; the checker must find a clash exactly when this does,
 *    and the pair it names must be one;
 *  - effect: when the checker passes a list, every output is then written
 *    the way ddptop writes (outfile_write), each with its own text; every
 *    input must still read as before, and every output must hold its own
 *    text: no collision passed.
 * The tree lives three folders below a private one, and a path climbs at
 * most two (link targets never climb), so nothing is written elsewhere. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXP 12
#define PLEN 256

static char g_base[64]; /* the private folder */
static char g_root[PATH_MAX];
static char g_cwd[PATH_MAX]; /* libFuzzer's (its corpus paths may be relative) */

static const char *const names[] = {"a", "b", "c.json", "c.json.gz", "c.rank0.json", "d1", "d2", "l1", "l2"};
#define NNAMES (sizeof(names) / sizeof(names[0]))

struct in {
    const uint8_t *p;
    size_t n;
};

static unsigned take(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* (at exit: the private folder goes; a crash leaves it, with the input) */
static void remove_base(void)
{
    if (chdir("/") == 0)
        nftw(g_base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
    if (g_base[0])
        return;
    snprintf(g_base, sizeof(g_base), "/tmp/ddptop_fuzz_paths.XXXXXX");
    if (!mkdtemp(g_base))
        abort();
    snprintf(g_root, sizeof(g_root), "%s/w1/w2/root", g_base);
    if (!getcwd(g_cwd, sizeof(g_cwd)))
        abort();
    atexit(remove_base);
}

/* A fresh, empty tree. */
static void reset(void)
{
    char w1[PATH_MAX];
    snprintf(w1, sizeof(w1), "%s/w1", g_base);
    nftw(w1, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/w1", g_base);
    mkdir(p, 0700);
    snprintf(p, sizeof(p), "%s/w1/w2", g_base);
    mkdir(p, 0700);
    mkdir(g_root, 0700);
    if (chdir(g_root) != 0)
        abort();
}

/* A folder inside the tree ("", "d1/", "d2/", "d1/d2/"). */
static const char *folder(unsigned k)
{
    static const char *const f[] = {"", "d1/", "d2/", "d1/d2/"};
    return f[k % 4];
}

static void build(struct in *in)
{
    unsigned ops = take(in) % 24;
    for (unsigned i = 0; i < ops; i++) {
        unsigned op = take(in), x = take(in), y = take(in);
        char a[PLEN], b[PLEN];
        snprintf(a, sizeof(a), "%s%s", folder(x >> 4), names[x % NNAMES]);
        switch (op % 5) {
        case 0:
            mkdir(a, 0700);
            break;
        case 1: {
            int fd = open(a, O_WRONLY | O_CREAT | O_EXCL, 0600);
            if (fd >= 0) {
                dprintf(fd, "input %s %u\n", a, i);
                close(fd);
            }
            break;
        }
        case 2:
            snprintf(b, sizeof(b), "%s%s", folder(y >> 4), names[y % NNAMES]);
            link(b, a);
            break;
        case 3:
            /* relative to the link's folder, never climbing: may dangle */
            snprintf(b, sizeof(b), "%s%s", folder(y >> 4), names[y % NNAMES]);
            symlink(b, a);
            break;
        default:
            /* absolute, into the tree */
            snprintf(b, sizeof(b), "%s/%s%s", g_root, folder(y >> 4), names[y % NNAMES]);
            symlink(b, a);
            break;
        }
    }
}

/* A path of up to 4 parts. */
static void make_path(struct in *in, char *out)
{
    unsigned head = take(in), parts = 1 + take(in) % 4, climbs = 0;
    size_t n = 0;
    if (head & 1)
        n += (size_t)snprintf(out + n, PLEN - n, "%s/", g_root);
    if (head & 2)
        n += (size_t)snprintf(out + n, PLEN - n, "./");
    for (unsigned k = 0; k < parts && n < PLEN - 40; k++) {
        unsigned c = take(in);
        const char *part = names[c % NNAMES];
        if ((c >> 4) % 5 == 0)
            part = ".";
        else if ((c >> 4) % 5 == 1 && climbs < 2) {
            part = "..";
            climbs++;
        }
        n += (size_t)snprintf(out + n, PLEN - n, "%s%s", k ? ((c & 0x80) ? "//" : "/") : "", part);
    }
    if (head & 4)
        snprintf(out + n, PLEN - n, "/");
}

/* the oracle's own identity of a path */
struct who {
    int file;
    dev_t dev;
    ino_t ino;
    char real[PATH_MAX];
    int entry;
    char canon[2 * PATH_MAX];
};

static void who_of(const char *path, struct who *w)
{
    memset(w, 0, sizeof(*w));
    struct stat st;
    if (stat(path, &st) == 0) {
        w->file = 1;
        w->dev = st.st_dev;
        w->ino = st.st_ino;
        if (!realpath(path, w->real))
            abort(); /* stat resolved it: so must realpath */
    }
    char d[PLEN], b[PLEN], rd[PATH_MAX];
    snprintf(d, sizeof(d), "%s", path);
    snprintf(b, sizeof(b), "%s", path);
    const char *dn = dirname(d), *bn = basename(b);
    if (!strcmp(bn, ".") || !strcmp(bn, "..") || !strcmp(bn, "/") || !bn[0])
        return;
    if (realpath(dn, rd) && stat(rd, &st) == 0 && S_ISDIR(st.st_mode)) {
        w->entry = 1;
        snprintf(w->canon, sizeof(w->canon), "%s/%s", rd, bn);
    }
}

static int oracle_same(const struct who *x, const struct who *y)
{
    if (x->file && y->file) {
        int ino = x->dev == y->dev && x->ino == y->ino, real = !strcmp(x->real, y->real);
        if (real && !ino)
            abort(); /* one resolved name, two files: the oracle is wrong */
        if (ino)
            return 1;
    }
    return x->entry && y->entry && !strcmp(x->canon, y->canon);
}

/* The file at path, read whole into buf (up to n bytes): its length, or -1. */
static ssize_t slurp(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t k = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        k = read(fd, buf, n);
    close(fd);
    return k;
}

/* One input, run in the tree's folder. */
static void one(const uint8_t *data, size_t size)
{
    reset();
    struct in in = {data, size};
    build(&in);
    static char paths[MAXP][PLEN];
    struct outfile_role r[MAXP];
    size_t n = 1 + take(&in) % MAXP;
    for (size_t i = 0; i < n; i++) {
        unsigned role = take(&in);
        make_path(&in, paths[i]);
        r[i] = (struct outfile_role){.path = paths[i], .what = role & 1 ? "--output" : "--replay", .output = role & 1};
    }

    size_t a = 0, b = 0;
    int got = outfile_clash(r, n, &a, &b);
    static struct who w[MAXP];
    for (size_t i = 0; i < n; i++)
        who_of(paths[i], &w[i]);
    int want = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            want |= r[i].output && i != j && oracle_same(&w[i], &w[j]);
    if (got != want) {
        fprintf(stderr, "outfile_clash says %s, the oracle %s:\n", got ? "clash" : "none", want ? "clash" : "none");
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "  %s %s\n", r[i].output ? "out" : "in ", paths[i]);
        abort();
    }
    if (got && (!r[a].output || a == b || a >= n || b >= n || !oracle_same(&w[a], &w[b])))
        abort();
    if (got)
        return;

    /* passed: write every output as ddptop does; nothing else may change */
    static char before[MAXP][256], after[256];
    ssize_t len[MAXP];
    for (size_t i = 0; i < n; i++)
        len[i] = r[i].output ? -1 : slurp(paths[i], before[i], sizeof(before[i]));
    char err[512];
    int wrote[MAXP] = {0};
    for (size_t i = 0; i < n; i++) {
        if (!r[i].output)
            continue;
        char text[64];
        int k = snprintf(text, sizeof(text), "output %zu\n", i);
        wrote[i] = outfile_write(paths[i], text, (size_t)k, err, sizeof(err)) == 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (r[i].output && wrote[i]) {
            char text[64];
            int k = snprintf(text, sizeof(text), "output %zu\n", i);
            if (slurp(paths[i], after, sizeof(after)) != k || memcmp(after, text, (size_t)k) != 0) {
                fprintf(stderr, "output %s does not hold its own text\n", paths[i]);
                abort();
            }
        } else if (!r[i].output && len[i] >= 0) {
            if (slurp(paths[i], after, sizeof(after)) != len[i] || memcmp(after, before[i], (size_t)len[i]) != 0) {
                fprintf(stderr, "input %s changed\n", paths[i]);
                abort();
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    one(data, size);
    if (chdir(g_cwd) != 0)
        abort();
    return 0;
}
