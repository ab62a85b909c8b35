/* data.c - loading MNIST-style IDX files, CIFAR-10 binary batches and the
 * generated "synthetic" set, normalising batches, and the distributed sampler.
 *
 * Every loader validates its input completely before a run starts: a wrong
 * magic, a short or over-long file, a corrupt gzip stream or an out-of-range
 * label is reported as one line naming the file, so a bad download fails at
 * start-up rather than as a mysterious loss curve. Files are opened through
 * trace/infile.h, which refuses anything but a regular file; an IDX file is
 * read whole and inflated there when it is gzip, so the same code takes both
 * the .gz files as distributed and unpacked copies, and idx_parse and
 * cifar_parse reach it from memory.
 */
#include "data.h"

#include "data_synth.h"
#include "rng.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infile.h"

const char *const data_names[] = {"fashion-mnist", "mnist", "cifar10", "synthetic", NULL};

#define MNIST_SIDE 28

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_TRAIN_FILES 5
#define CIFAR_SUBDIR "cifar-10-batches-bin"

/* A synthetic set in a real set's shape takes that set's sizes, so that
 * an epoch of it is as long as the real one's; any other shape MNIST's. */
static const struct synth_size {
    int c, h, w;
    int train, test;
} synth_sizes[] = {
    {3, 32, 32, 50000, 10000}, /* CIFAR-10 */
    {1, 28, 28, 60000, 10000}, /* MNIST, Fashion-MNIST (and every other shape) */
};

/* n is an int throughout the project, and one sample's bytes must fit too. */
#define IDX_MAX_BYTES ((uint64_t)INT_MAX)

__attribute__((format(printf, 3, 4))) static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int join_path(char *out, size_t len, const char *dir, const char *name, char *err, size_t errlen)
{
    size_t dl = strlen(dir);
    const char *sep = dl > 0 && dir[dl - 1] == '/' ? "" : "/";
    int n = snprintf(out, len, "%s%s%s", dir, sep, name);
    if (n < 0 || (size_t)n >= len) {
        set_err(err, errlen, "%s%s%s: path too long", dir, sep, name);
        return -1;
    }
    return 0;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void set_name(struct dataset *d, const char *name, const char *source)
{
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->source, sizeof d->source, "%s", source);
}

int data_known(const char *name)
{
    if (!name)
        return 0;
    for (int i = 0; data_names[i]; i++)
        if (strcmp(data_names[i], name) == 0)
            return 1;
    return 0;
}

const char *data_default_name(void)
{
    if (is_file(DATA_DEBIAN_FASHION_DIR "/train-images-idx3-ubyte.gz") ||
        is_file(DATA_DEBIAN_FASHION_DIR "/train-images-idx3-ubyte"))
        return "fashion-mnist";
    return "synthetic";
}

void data_free(struct dataset *d)
{
    if (!d)
        return;
    free(d->pixels);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

/* ---- IDX ------------------------------------------------------------------ */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The checks of idx_read on a whole file's bytes, which this takes over
 * (bytes: malloc'd, n long, raw or gzip). Returns the data, moved down over
 * the header in its own block (the inflated copy's, for gzip) so that no
 * second copy is made, or NULL with err set and everything freed. */
static uint8_t *idx_take(char *bytes, size_t n, const char *path, int want_dims, int dims_out[3], char *err,
                         size_t errlen)
{
    char *plain = NULL, why[256];
    size_t nplain = 0;
    enum infile_gz gz = infile_gunzip(bytes, n, &plain, &nplain, why, sizeof why);
    if (gz != INFILE_PLAIN) {
        free(bytes);
        if (gz == INFILE_GZ_BIG) {
            set_err(err, errlen, "%s: %s", path, why);
            return NULL;
        }
        if (gz != INFILE_GZ_OK) {
            set_err(err, errlen, "%s: corrupt gzip stream (zlib: %s)", path, why);
            free(plain);
            return NULL;
        }
        bytes = plain;
        n = nplain;
    }
    const uint8_t *u = (const uint8_t *)bytes;
    size_t hdr_len = 4 + 4 * (size_t)want_dims;
    if (n >= 4) {
        uint32_t magic = be32(u);
        uint32_t expect = 0x800u | (uint32_t)want_dims;
        if (magic != expect) {
            set_err(err, errlen, "%s: bad IDX magic 0x%08x (expected 0x%08x)", path, magic, expect);
            goto fail;
        }
    }
    if (n < hdr_len) {
        set_err(err, errlen, "%s: truncated header: expected %zu bytes, found %zu", path, hdr_len, n);
        goto fail;
    }
    uint64_t total = 1;
    for (int i = 0; i < 3; i++)
        dims_out[i] = 1;
    for (int i = 0; i < want_dims; i++) {
        uint32_t d = be32(u + 4 + 4 * i);
        if (d == 0 || d > IDX_MAX_BYTES) {
            set_err(err, errlen, "%s: bad IDX dimension %d: %u", path, i, d);
            goto fail;
        }
        total *= d;
        if (total > IDX_MAX_BYTES) {
            set_err(err, errlen, "%s: IDX data too large (over %llu bytes)", path, (unsigned long long)IDX_MAX_BYTES);
            goto fail;
        }
        dims_out[i] = (int)d;
    }
    if (n - hdr_len < total) {
        set_err(err, errlen, "%s: truncated: expected %llu bytes of data, found %zu", path, (unsigned long long)total,
                n - hdr_len);
        goto fail;
    }
    if (n - hdr_len > total) {
        set_err(err, errlen, "%s: trailing bytes after data (expected %llu bytes of data)", path,
                (unsigned long long)total);
        goto fail;
    }
    memmove(bytes, bytes + hdr_len, (size_t)total);
    char *fit = realloc(bytes, (size_t)total);
    return (uint8_t *)(fit ? fit : bytes);

fail:
    free(bytes);
    return NULL;
}

uint8_t *idx_read(const char *path, int want_dims, int dims_out[3], char *err, size_t errlen)
{
    if (want_dims < 1 || want_dims > 3) {
        set_err(err, errlen, "%s: cannot read an IDX file with %d dimensions", path, want_dims);
        return NULL;
    }
    char *bytes;
    size_t n;
    if (infile_read(path, 0, 0, &bytes, &n, err, errlen) != 0)
        return NULL;
    return idx_take(bytes, n, path, want_dims, dims_out, err, errlen);
}

uint8_t *idx_parse(const void *buf, size_t n, const char *name, int want_dims, int dims_out[3], char *err,
                   size_t errlen)
{
    if (want_dims < 1 || want_dims > 3) {
        set_err(err, errlen, "%s: cannot read an IDX file with %d dimensions", name, want_dims);
        return NULL;
    }
    char *bytes = malloc(n ? n : 1);
    if (!bytes) {
        set_err(err, errlen, "%s: out of memory for %zu bytes", name, n);
        return NULL;
    }
    memcpy(bytes, buf, n);
    return idx_take(bytes, n, name, want_dims, dims_out, err, errlen);
}

/* Picks `<dir>/<name>`, else `<dir>/<name>.gz`. */
static int idx_find(const char *dir, const char *name, char *path, size_t len, char *err, size_t errlen)
{
    char gz[4096];
    if (join_path(path, len, dir, name, err, errlen) < 0)
        return -1;
    struct stat st;
    if (stat(path, &st) == 0)
        return 0;
    int raw_errno = errno;
    if (snprintf(gz, sizeof gz, "%s.gz", path) >= (int)sizeof gz) {
        set_err(err, errlen, "%s.gz: path too long", path);
        return -1;
    }
    if (stat(gz, &st) == 0) {
        snprintf(path, len, "%s", gz);
        return 0;
    }
    set_err(err, errlen, "%s: %s; %s: %s", path, strerror(raw_errno), gz, strerror(errno));
    return -1;
}

/* One split of an MNIST-style data set: `<prefix>-images-idx3-ubyte` and
 * `<prefix>-labels-idx1-ubyte`. */
static int idx_load_split(const char *name, const char *dir, const char *prefix, float mean, float std,
                          struct dataset *d, char *err, size_t errlen)
{
    char ipath[4096], lpath[4096], file[64];
    int idims[3], ldims[3];
    uint8_t *pixels = NULL, *labels = NULL;

    snprintf(file, sizeof file, "%s-images-idx3-ubyte", prefix);
    if (idx_find(dir, file, ipath, sizeof ipath, err, errlen) < 0)
        goto fail;
    snprintf(file, sizeof file, "%s-labels-idx1-ubyte", prefix);
    if (idx_find(dir, file, lpath, sizeof lpath, err, errlen) < 0)
        goto fail;
    pixels = idx_read(ipath, 3, idims, err, errlen);
    if (!pixels)
        goto fail;
    if (idims[1] != MNIST_SIDE || idims[2] != MNIST_SIDE) {
        set_err(err, errlen, "%s: images are %dx%d, expected %dx%d", ipath, idims[1], idims[2], MNIST_SIDE, MNIST_SIDE);
        goto fail;
    }
    labels = idx_read(lpath, 1, ldims, err, errlen);
    if (!labels)
        goto fail;
    if (ldims[0] != idims[0]) {
        set_err(err, errlen, "%s: %d images but %s has %d labels", ipath, idims[0], lpath, ldims[0]);
        goto fail;
    }
    for (int i = 0; i < ldims[0]; i++) {
        if (labels[i] >= DATA_CLASSES) {
            set_err(err, errlen, "%s: label %u at index %d is out of range (expected 0..%d)", lpath, labels[i], i,
                    DATA_CLASSES - 1);
            goto fail;
        }
    }

    set_name(d, name, dir);
    d->n = idims[0];
    d->c = 1;
    d->h = MNIST_SIDE;
    d->w = MNIST_SIDE;
    d->classes = DATA_CLASSES;
    d->pixels = pixels;
    d->labels = labels;
    d->mean[0] = mean;
    d->std[0] = std;
    return 0;

fail:
    free(pixels);
    free(labels);
    return -1;
}

/* ---- CIFAR-10 ------------------------------------------------------------- */

/* The tarball unpacks into cifar-10-batches-bin/, so people point --data-dir
 * at either the folder they unpacked into or the batches folder itself. */
static int cifar_base(const char *dir, char *base, size_t len, char *err, size_t errlen)
{
    char probe[4096];
    if (join_path(probe, sizeof probe, dir, "data_batch_1.bin", err, errlen) < 0)
        return -1;
    int here = is_file(probe);
    if (join_path(probe, sizeof probe, dir, "test_batch.bin", err, errlen) < 0)
        return -1;
    here = here || is_file(probe);
    if (join_path(probe, sizeof probe, dir, CIFAR_SUBDIR, err, errlen) < 0)
        return -1;
    if (!here && is_dir(probe))
        return join_path(base, len, dir, CIFAR_SUBDIR, err, errlen);
    snprintf(base, len, "%s", dir);
    return 0;
}

/* The records in a batch file of size bytes, or -1 with err set. */
static long long cifar_records(long long size, const char *path, char *err, size_t errlen)
{
    if (size <= 0 || size % CIFAR_RECORD != 0) {
        set_err(err, errlen, "%s: size %lld bytes is not a nonzero multiple of %d (1 label + %d pixel bytes)", path,
                size, CIFAR_RECORD, CIFAR_PIXELS);
        return -1;
    }
    return size / CIFAR_RECORD;
}

/* Splits count records into labels and pixels, checking every label;
 * first numbers the first record in messages. */
static int cifar_decode(const uint8_t *recs, size_t count, const char *path, long long first, uint8_t *labels,
                        uint8_t *pixels, char *err, size_t errlen)
{
    for (size_t k = 0; k < count; k++) {
        const uint8_t *rec = recs + k * CIFAR_RECORD;
        if (rec[0] >= DATA_CLASSES) {
            set_err(err, errlen, "%s: label %u at record %lld is out of range (expected 0..%d)", path, rec[0],
                    first + (long long)k, DATA_CLASSES - 1);
            return -1;
        }
        labels[k] = rec[0];
        memcpy(pixels + k * CIFAR_PIXELS, rec + 1, CIFAR_PIXELS);
    }
    return 0;
}

/* Hands n decoded images over to d. */
static void cifar_fill(struct dataset *d, const char *source, long long n, uint8_t *pixels, uint8_t *labels)
{
    static const float mean[3] = {0.4914f, 0.4822f, 0.4465f};
    static const float std[3] = {0.2470f, 0.2435f, 0.2616f};
    set_name(d, "cifar10", source);
    d->n = (int)n;
    d->c = 3;
    d->h = CIFAR_SIDE;
    d->w = CIFAR_SIDE;
    d->classes = DATA_CLASSES;
    d->pixels = pixels;
    d->labels = labels;
    memcpy(d->mean, mean, sizeof mean);
    memcpy(d->std, std, sizeof std);
}

/* Reads the concatenation of nfiles batch files into d. Sizes are checked
 * for every file before anything is allocated, so a missing or damaged
 * batch 5 fails as fast as a damaged batch 1. */
static int cifar_load_split(const char *base, const char *const *files, int nfiles, struct dataset *d, char *err,
                            size_t errlen)
{
    enum { BLOCK_RECORDS = 256 };
    FILE *fp[CIFAR_TRAIN_FILES] = {0};
    char paths[CIFAR_TRAIN_FILES][4096];
    long long records[CIFAR_TRAIN_FILES];
    uint8_t *pixels = NULL, *labels = NULL, *block = NULL;
    long long n = 0;
    int rc = -1;

    assert(nfiles <= CIFAR_TRAIN_FILES);
    for (int i = 0; i < nfiles; i++) {
        if (join_path(paths[i], sizeof paths[i], base, files[i], err, errlen) < 0)
            goto out;
        struct stat st;
        int fd = infile_open(paths[i], 0, &st, err, errlen);
        if (fd < 0)
            goto out;
        fp[i] = fdopen(fd, "rb");
        if (!fp[i]) {
            set_err(err, errlen, "%s: %s", paths[i], strerror(errno));
            close(fd);
            goto out;
        }
        records[i] = cifar_records((long long)st.st_size, paths[i], err, errlen);
        if (records[i] < 0)
            goto out;
        n += records[i];
        if (n > INT_MAX / CIFAR_PIXELS) {
            set_err(err, errlen, "%s: too many records (%lld in all)", paths[i], n);
            goto out;
        }
    }

    pixels = malloc((size_t)n * CIFAR_PIXELS);
    labels = malloc((size_t)n);
    block = malloc((size_t)BLOCK_RECORDS * CIFAR_RECORD);
    if (!pixels || !labels || !block) {
        set_err(err, errlen, "%s: out of memory for %lld images", base, n);
        goto out;
    }
    long long at = 0;
    for (int i = 0; i < nfiles; i++) {
        for (long long r = 0; r < records[i];) {
            size_t want = (size_t)(records[i] - r < BLOCK_RECORDS ? records[i] - r : BLOCK_RECORDS);
            size_t got = fread(block, CIFAR_RECORD, want, fp[i]);
            if (got != want) {
                if (ferror(fp[i]))
                    set_err(err, errlen, "%s: read error: %s", paths[i], strerror(errno));
                else
                    set_err(err, errlen, "%s: file shrank while reading (record %lld of %lld)", paths[i],
                            r + (long long)got, records[i]);
                goto out;
            }
            if (cifar_decode(block, want, paths[i], r, labels + at, pixels + (size_t)at * CIFAR_PIXELS, err, errlen) !=
                0)
                goto out;
            r += (long long)want;
            at += (long long)want;
        }
    }

    cifar_fill(d, base, n, pixels, labels);
    pixels = labels = NULL;
    rc = 0;

out:
    for (int i = 0; i < nfiles; i++)
        if (fp[i])
            fclose(fp[i]);
    free(block);
    free(pixels);
    free(labels);
    return rc;
}

int cifar_parse(const void *buf, size_t n, const char *name, struct dataset *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    long long count = cifar_records(n > (size_t)LLONG_MAX ? -1 : (long long)n, name, err, errlen);
    if (count < 0)
        return -1;
    if (count > INT_MAX / CIFAR_PIXELS) {
        set_err(err, errlen, "%s: too many records (%lld)", name, count);
        return -1;
    }
    uint8_t *pixels = malloc((size_t)count * CIFAR_PIXELS), *labels = malloc((size_t)count);
    if (!pixels || !labels || cifar_decode(buf, (size_t)count, name, 0, labels, pixels, err, errlen) != 0) {
        if (!pixels || !labels)
            set_err(err, errlen, "%s: out of memory for %lld images", name, count);
        free(pixels);
        free(labels);
        return -1;
    }
    cifar_fill(d, name, count, pixels, labels);
    return 0;
}

static int cifar_load(const char *dir, struct dataset *train, struct dataset *test, char *err, size_t errlen)
{
    static const char *const train_files[CIFAR_TRAIN_FILES] = {
        "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
    static const char *const test_files[1] = {"test_batch.bin"};
    char base[4096];
    if (cifar_base(dir, base, sizeof base, err, errlen) < 0)
        return -1;
    if (cifar_load_split(base, train_files, CIFAR_TRAIN_FILES, train, err, errlen) < 0)
        return -1;
    if (cifar_load_split(base, test_files, 1, test, err, errlen) < 0) {
        data_free(train);
        return -1;
    }
    return 0;
}

/* ---- synthetic ------------------------------------------------------------ */

/* The generated "synthetic" set (its pixels: data_synth.c). */

static int synth_split(uint64_t seed, int split, int n, const struct synth_protos *pr, struct dataset *d, char *err,
                       size_t errlen)
{
    size_t img = (size_t)pr->c * (size_t)pr->h * (size_t)pr->w;
    d->pixels = malloc((size_t)n * img);
    d->labels = malloc((size_t)n);
    if (!d->pixels || !d->labels) {
        data_free(d);
        set_err(err, errlen, "synthetic: out of memory for %d images of %dx%dx%d", n, pr->c, pr->h, pr->w);
        return -1;
    }
    synth_fill(seed, split, pr, n, d->pixels, d->labels);
    if (pr->c == 1 && pr->h == SYNTH_SIDE && pr->w == SYNTH_SIDE) {
        set_name(d, "synthetic", "generated");
    } else {
        char name[sizeof(d->name)];
        snprintf(name, sizeof(name), "synth-%dx%dx%d", pr->c, pr->h, pr->w);
        set_name(d, name, "generated");
    }
    d->n = n;
    d->c = pr->c;
    d->h = pr->h;
    d->w = pr->w;
    d->classes = DATA_CLASSES;
    return 0;
}

/* Mean and std per channel are measured on the generated train split
 * (integer sums, so they are identical on every machine) and used for both
 * splits, as one would use published constants. For seed 1 at 1x28x28 they
 * come to about 0.27/0.31. */
static void synth_stats(struct dataset *train, struct dataset *test)
{
    size_t plane = (size_t)train->h * (size_t)train->w;
    for (int ch = 0; ch < train->c; ch++) {
        uint64_t sum, sumsq;
        synth_sums(train->pixels, train->n, train->c, plane, ch, &sum, &sumsq);
        double count = (double)train->n * (double)plane;
        double mean = (double)sum / count;
        double var = (double)sumsq / count - mean * mean;
        train->mean[ch] = test->mean[ch] = (float)(mean / 255.0);
        train->std[ch] = test->std[ch] = (float)(sqrt(var > 0.0 ? var : 1.0) / 255.0);
    }
}

int data_synthetic(uint64_t seed, int c, int h, int w, struct dataset *train, struct dataset *test, char *err,
                   size_t errlen)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (c < 1 || c > DATA_MAX_CHANNELS || h < DATA_MIN_SIDE || h > DATA_MAX_SIDE || w < DATA_MIN_SIDE ||
        w > DATA_MAX_SIDE) {
        set_err(err, errlen, "synthetic: %dx%dx%d: channels are 1 to %d, sides %d to %d", c, h, w, DATA_MAX_CHANNELS,
                DATA_MIN_SIDE, DATA_MAX_SIDE);
        return -1;
    }
    size_t img = (size_t)c * (size_t)h * (size_t)w;
    size_t k = 0, last = sizeof(synth_sizes) / sizeof(synth_sizes[0]) - 1;
    while (k < last && (synth_sizes[k].c != c || synth_sizes[k].h != h || synth_sizes[k].w != w))
        k++;
    int ntrain = synth_sizes[k].train, ntest = synth_sizes[k].test;
    if ((size_t)ntrain * img > SYNTH_BYTES) {
        ntrain = (int)(SYNTH_BYTES / img);
        ntest = ntrain / 6 > 0 ? ntrain / 6 : 1;
    }
    struct synth_protos pr;
    if (synth_prototypes(seed, c, h, w, &pr) != 0) {
        set_err(err, errlen, "synthetic: out of memory");
        return -1;
    }
    int rc = synth_split(seed, 0, ntrain, &pr, train, err, errlen);
    if (rc == 0) {
        rc = synth_split(seed, 1, ntest, &pr, test, err, errlen);
        if (rc < 0)
            data_free(train);
    }
    synth_protos_free(&pr);
    if (rc == 0)
        synth_stats(train, test);
    return rc;
}

/* ---- entry points --------------------------------------------------------- */

int data_load(const char *name, const char *dir, uint64_t seed, struct dataset *train, struct dataset *test, char *err,
              size_t errlen)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    if (!data_known(name)) {
        set_err(err, errlen, "unknown data set '%s' (known: fashion-mnist, mnist, cifar10, synthetic)",
                name ? name : "(null)");
        return -1;
    }
    if (strcmp(name, "synthetic") == 0)
        return data_synthetic(seed, 1, SYNTH_SIDE, SYNTH_SIDE, train, test, err, errlen);

    int have_dir = dir && *dir;
    if (!have_dir && strcmp(name, "fashion-mnist") == 0) {
        dir = DATA_DEBIAN_FASHION_DIR;
        have_dir = 1;
    }
    if (!have_dir) {
        set_err(err, errlen, "%s: --data-dir is required for this data set", name);
        return -1;
    }
    if (strcmp(name, "cifar10") == 0)
        return cifar_load(dir, train, test, err, errlen);

    float mean = strcmp(name, "mnist") == 0 ? 0.1307f : 0.2860f;
    float std = strcmp(name, "mnist") == 0 ? 0.3081f : 0.3530f;
    if (idx_load_split(name, dir, "train", mean, std, train, err, errlen) < 0)
        return -1;
    if (idx_load_split(name, dir, "t10k", mean, std, test, err, errlen) < 0) {
        data_free(train);
        return -1;
    }
    return 0;
}

int data_files(const char *name, const char *dir, char (*out)[DATA_PATH], int max)
{
    static const char *const idx[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                      "t10k-labels-idx1-ubyte"};
    static const char *const cifar[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                        "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    if (!name || !data_known(name) || !strcmp(name, "synthetic"))
        return 0;
    if ((!dir || !*dir) && !strcmp(name, "fashion-mnist"))
        dir = DATA_DEBIAN_FASHION_DIR;
    if (!dir || !*dir)
        return 0;
    int n = 0;
    /* every form a file may be read in: raw or .gz; CIFAR's in the folder
     * or in the tarball's folder inside it */
    for (int form = 0; form < 2; form++)
        for (int i = 0; !strcmp(name, "cifar10") && i < 6 && n < max; i++)
            snprintf(out[n++], DATA_PATH, "%s%s%s", dir, form ? "/" CIFAR_SUBDIR "/" : "/", cifar[i]);
    for (int form = 0; form < 2; form++)
        for (int i = 0; strcmp(name, "cifar10") && i < 4 && n < max; i++)
            snprintf(out[n++], DATA_PATH, "%s/%s%s", dir, idx[i], form ? ".gz" : "");
    return n;
}

void data_gather(const struct dataset *d, const uint32_t *idx, int count, float *x, int32_t *y)
{
    /* A 256-entry table per channel turns normalisation into one load per
     * pixel and gives exactly (p/255 - mean)/std, as a reference would. */
    float lut[DATA_MAX_CHANNELS][256];
    size_t plane = (size_t)d->h * (size_t)d->w;
    size_t sample = (size_t)d->c * plane;
    assert(d->c >= 1 && d->c <= DATA_MAX_CHANNELS);
    for (int c = 0; c < d->c; c++)
        for (int p = 0; p < 256; p++)
            lut[c][p] = ((float)p / 255.0f - d->mean[c]) / d->std[c];
    for (int i = 0; i < count; i++) {
        assert(idx[i] < (uint32_t)d->n);
        const uint8_t *src = d->pixels + (size_t)idx[i] * sample;
        float *dst = x + (size_t)i * sample;
        for (int c = 0; c < d->c; c++) {
            const float *t = lut[c];
            for (size_t k = 0; k < plane; k++)
                dst[(size_t)c * plane + k] = t[src[(size_t)c * plane + k]];
        }
        y[i] = d->labels[idx[i]];
    }
}

/* ---- sampler -------------------------------------------------------------- */

int sampler_init(struct sampler *s, int n, int world, int rank, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    if (n <= 0 || world <= 0 || rank < 0 || rank >= world || n / world == 0)
        return -1;
    s->perm = malloc((size_t)n * sizeof *s->perm);
    if (!s->perm)
        return -1;
    s->n = n;
    s->world = world;
    s->rank = rank;
    s->per_rank = n / world;
    s->seed = seed;
    sampler_set_epoch(s, 0);
    return 0;
}

void sampler_set_epoch(struct sampler *s, int epoch)
{
    struct rng r;
    rng_seed(&r, s->seed * 1000003u + (uint64_t)(int64_t)epoch);
    for (int i = 0; i < s->n; i++)
        s->perm[i] = (uint32_t)i;
    for (int i = s->n - 1; i > 0; i--) {
        uint32_t j = rng_below(&r, (uint32_t)i + 1);
        uint32_t t = s->perm[i];
        s->perm[i] = s->perm[j];
        s->perm[j] = t;
    }
}

void sampler_free(struct sampler *s)
{
    if (!s)
        return;
    free(s->perm);
    s->perm = NULL;
}
