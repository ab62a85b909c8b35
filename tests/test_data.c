/* test_data.c - data set loaders, batch normalisation and the distributed
 * sampler.
 *
 * Every fixture (IDX files raw and gzip'd, CIFAR-10 batches, damaged
 * variants of each) is written at run time into a mkdtemp folder under /tmp
 * and removed afterwards, so the loaders are checked pixel by pixel against
 * data whose every byte the test knows. A FIFO or a device in place of a
 * data file is refused before it is read, and the in-memory entry points
 * (idx_parse, cifar_parse) agree with the loaders. `test_data fashion`
 * reads the installed Fashion-MNIST instead, and exits 77 (SKIPPED) without
 * Debian's package (ctest runs it as test_data_fashion).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "data.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SIDE 28
#define IMG (SIDE * SIDE)
#define CIFAR_PIX 3072
#define CIFAR_REC 3073

static char g_root[256];

/* ---- fixtures ------------------------------------------------------------- */

static void fresh_dir(char *out, size_t len, const char *name)
{
    int n = snprintf(out, len, "%s/%s", g_root, name);
    assert_true(n > 0 && (size_t)n < len);
    assert_int_equal(mkdir(out, 0700), 0);
}

static void path_in(char *out, size_t len, const char *dir, const char *name)
{
    int n = snprintf(out, len, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < len);
}

static void write_bytes(const char *path, int gz, const void *buf, size_t len)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        if (len > 0)
            assert_int_equal(gzwrite(f, buf, (unsigned)len), (int)len);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        if (len > 0)
            assert_int_equal(fwrite(buf, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
    }
}

static size_t read_bytes(const char *path, uint8_t *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* An IDX file with the given magic and dims followed by len data bytes,
 * whatever prod(dims) says, so damaged files are as easy as good ones. */
static void write_idx(const char *path, int gz, uint32_t magic, const uint32_t *dims, int ndims, const uint8_t *data,
                      size_t len)
{
    size_t hdr = 4 + 4 * (size_t)ndims;
    uint8_t *buf = malloc(hdr + len + 1);
    assert_non_null(buf);
    put_be32(buf, magic);
    for (int i = 0; i < ndims; i++)
        put_be32(buf + 4 + 4 * i, dims[i]);
    if (len > 0)
        memcpy(buf + hdr, data, len);
    write_bytes(path, gz, buf, hdr + len);
    free(buf);
}

static uint8_t img_pixel(int salt, int i, int k)
{
    return (uint8_t)(salt * 101 + i * 37 + k * 5 + (k / SIDE) * 3);
}

static uint8_t img_label(int salt, int i)
{
    return (uint8_t)((salt * 3 + i * 7) % 10);
}

static void fill_images(uint8_t *px, uint8_t *lb, int n, int salt)
{
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < IMG; k++)
            px[(size_t)i * IMG + k] = img_pixel(salt, i, k);
        lb[i] = img_label(salt, i);
    }
}

/* Writes `<prefix>-images-idx3-ubyte` and `<prefix>-labels-idx1-ubyte`
 * (plus .gz when gz) with n images made by fill_images(salt). */
static void write_mnist_split(const char *dir, const char *prefix, int gz, int n, int salt)
{
    char path[512], name[64];
    uint8_t *px = malloc((size_t)n * IMG), *lb = malloc((size_t)n);
    assert_non_null(px);
    assert_non_null(lb);
    fill_images(px, lb, n, salt);
    uint32_t idims[3] = {(uint32_t)n, SIDE, SIDE}, ldims[1] = {(uint32_t)n};
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", prefix, gz ? ".gz" : "");
    path_in(path, sizeof path, dir, name);
    write_idx(path, gz, 0x803, idims, 3, px, (size_t)n * IMG);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", prefix, gz ? ".gz" : "");
    path_in(path, sizeof path, dir, name);
    write_idx(path, gz, 0x801, ldims, 1, lb, (size_t)n);
    free(px);
    free(lb);
}

#define N_TRAIN 5
#define N_TEST 3
#define SALT_TRAIN 1
#define SALT_TEST 2

static void write_mnist_dir(const char *dir, int gz)
{
    write_mnist_split(dir, "train", gz, N_TRAIN, SALT_TRAIN);
    write_mnist_split(dir, "t10k", gz, N_TEST, SALT_TEST);
}

static void assert_zeroed(const struct dataset *d)
{
    assert_null(d->pixels);
    assert_null(d->labels);
    assert_int_equal(d->n, 0);
}

/* Runs data_load, expects failure with err naming `path` and saying
 * `phrase`, and both outputs left empty. */
static void expect_load_error(const char *name, const char *dir, const char *path, const char *phrase)
{
    struct dataset tr, te;
    char err[1024] = "";
    memset(&tr, 0x5a, sizeof tr);
    memset(&te, 0x5a, sizeof te);
    int rc = data_load(name, dir, 1, &tr, &te, err, sizeof err);
    if (rc != -1 || !strstr(err, path) || !strstr(err, phrase))
        print_error("rc=%d err='%s' (wanted '%s' and '%s')\n", rc, err, path, phrase);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, phrase));
    assert_null(strchr(err, '\n'));
    assert_zeroed(&tr);
    assert_zeroed(&te);
}

/* Checks a loaded MNIST-style split against fill_images(salt). */
static void check_split(const struct dataset *d, int n, int salt, const char *name, const char *dir, float mean,
                        float std)
{
    assert_string_equal(d->name, name);
    assert_string_equal(d->source, dir);
    assert_int_equal(d->n, n);
    assert_int_equal(d->c, 1);
    assert_int_equal(d->h, SIDE);
    assert_int_equal(d->w, SIDE);
    assert_int_equal(d->classes, 10);
    assert_true(d->mean[0] == mean);
    assert_true(d->std[0] == std);
    for (int i = 0; i < n; i++) {
        assert_int_equal(d->labels[i], img_label(salt, i));
        for (int k = 0; k < IMG; k++)
            assert_int_equal(d->pixels[(size_t)i * IMG + k], img_pixel(salt, i, k));
    }
}

static void check_gather_mnist(const struct dataset *d, int salt, float mean, float std)
{
    const uint32_t idx[3] = {4, 0, 2};
    float x[3 * IMG];
    int32_t y[3] = {-1, -1, -1};
    data_gather(d, idx, 3, x, y);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(y[i], img_label(salt, (int)idx[i]));
        for (int k = 0; k < IMG; k++) {
            float want = ((float)img_pixel(salt, (int)idx[i], k) / 255.0f - mean) / std;
            assert_true(x[(size_t)i * IMG + k] == want);
        }
    }
}

/* ---- IDX: good files ------------------------------------------------------ */

static void test_idx_roundtrip_raw(void **state)
{
    char dir[512];
    fresh_dir(dir, sizeof dir, "mnist_raw");
    write_mnist_dir(dir, 0);
    struct dataset tr, te;
    char err[512] = "";
    assert_int_equal(data_load("mnist", dir, 1, &tr, &te, err, sizeof err), 0);
    check_split(&tr, N_TRAIN, SALT_TRAIN, "mnist", dir, 0.1307f, 0.3081f);
    check_split(&te, N_TEST, SALT_TEST, "mnist", dir, 0.1307f, 0.3081f);
    check_gather_mnist(&tr, SALT_TRAIN, 0.1307f, 0.3081f);
    data_free(&tr);
    data_free(&te);
    assert_null(tr.pixels);
}

static void test_idx_roundtrip_gz(void **state)
{
    char dir[512];
    fresh_dir(dir, sizeof dir, "fashion_gz");
    write_mnist_dir(dir, 1);
    struct dataset tr, te;
    char err[512] = "";
    assert_int_equal(data_load("fashion-mnist", dir, 1, &tr, &te, err, sizeof err), 0);
    check_split(&tr, N_TRAIN, SALT_TRAIN, "fashion-mnist", dir, 0.2860f, 0.3530f);
    check_split(&te, N_TEST, SALT_TEST, "fashion-mnist", dir, 0.2860f, 0.3530f);
    check_gather_mnist(&tr, SALT_TRAIN, 0.2860f, 0.3530f);
    data_free(&tr);
    data_free(&te);
}

/* Raw train files next to gzip'd test files, and a raw file taking
 * precedence over a .gz of the same name. */
static void test_idx_mixed_and_precedence(void **state)
{
    char dir[512];
    fresh_dir(dir, sizeof dir, "mixed");
    write_mnist_split(dir, "train", 0, N_TRAIN, SALT_TRAIN);
    write_mnist_split(dir, "train", 1, N_TRAIN, 9); /* shadowed by the raw files */
    write_mnist_split(dir, "t10k", 1, N_TEST, SALT_TEST);
    struct dataset tr, te;
    char err[512] = "";
    assert_int_equal(data_load("mnist", dir, 1, &tr, &te, err, sizeof err), 0);
    check_split(&tr, N_TRAIN, SALT_TRAIN, "mnist", dir, 0.1307f, 0.3081f);
    check_split(&te, N_TEST, SALT_TEST, "mnist", dir, 0.1307f, 0.3081f);
    data_free(&tr);
    data_free(&te);
}

static void test_idx_read_dims(void **state)
{
    char dir[512], path[600], err[512] = "";
    fresh_dir(dir, sizeof dir, "idx_read");
    const uint8_t lb[7] = {0, 1, 2, 3, 4, 5, 255};
    const uint32_t ldims[1] = {7};
    path_in(path, sizeof path, dir, "labels");
    write_idx(path, 1, 0x801, ldims, 1, lb, sizeof lb);
    int dims[3] = {-1, -1, -1};
    uint8_t *got = idx_read(path, 1, dims, err, sizeof err);
    assert_non_null(got);
    assert_int_equal(dims[0], 7);
    assert_int_equal(dims[1], 1);
    assert_int_equal(dims[2], 1);
    assert_memory_equal(got, lb, sizeof lb); /* idx_read itself does not judge label values */
    free(got);

    uint8_t px[2 * 3 * 4];
    for (int i = 0; i < (int)sizeof px; i++)
        px[i] = (uint8_t)(i * 11);
    const uint32_t idims[3] = {2, 3, 4};
    path_in(path, sizeof path, dir, "images");
    write_idx(path, 0, 0x803, idims, 3, px, sizeof px);
    got = idx_read(path, 3, dims, err, sizeof err);
    assert_non_null(got);
    assert_int_equal(dims[0], 2);
    assert_int_equal(dims[1], 3);
    assert_int_equal(dims[2], 4);
    assert_memory_equal(got, px, sizeof px);
    free(got);

    /* Asking for 1 dim of a 3-dim file is a magic mismatch. */
    assert_null(idx_read(path, 1, dims, err, sizeof err));
    assert_non_null(strstr(err, "bad IDX magic 0x00000803 (expected 0x00000801)"));
}

/* ---- IDX: damaged files --------------------------------------------------- */

static void test_idx_bad_magic(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "bad_magic");
    write_mnist_dir(dir, 0);
    uint8_t px[N_TRAIN * IMG] = {0};
    const uint32_t dims[3] = {N_TRAIN, SIDE, SIDE};
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte");
    write_idx(path, 0, 0x00000801, dims, 3, px, sizeof px);
    expect_load_error("mnist", dir, path, "bad IDX magic 0x00000801 (expected 0x00000803)");
    /* A float IDX (type 0x0d) is not accepted either. */
    write_idx(path, 0, 0x00000d03, dims, 3, px, sizeof px);
    expect_load_error("mnist", dir, path, "bad IDX magic 0x00000d03 (expected 0x00000803)");
}

static void test_idx_truncated_data(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "trunc_data");
    write_mnist_dir(dir, 0);
    uint8_t px[N_TRAIN * IMG] = {0};
    const uint32_t dims[3] = {N_TRAIN, SIDE, SIDE};
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte");
    write_idx(path, 0, 0x803, dims, 3, px, sizeof px - 10);
    expect_load_error("mnist", dir, path, "truncated: expected 3920 bytes of data, found 3910");
    /* The same through gzip (the raw file would shadow the .gz). */
    assert_int_equal(unlink(path), 0);
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte.gz");
    write_idx(path, 1, 0x803, dims, 3, px, sizeof px - 1);
    expect_load_error("mnist", dir, path, "truncated: expected 3920 bytes of data, found 3919");
}

static void test_idx_truncated_header(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "trunc_hdr");
    write_mnist_dir(dir, 0);
    const uint8_t hdr[10] = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0};
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte");
    write_bytes(path, 0, hdr, sizeof hdr);
    expect_load_error("mnist", dir, path, "truncated header: expected 16 bytes, found 10");
    /* Shorter than the magic itself, and empty. */
    write_bytes(path, 0, hdr, 2);
    expect_load_error("mnist", dir, path, "truncated header: expected 16 bytes, found 2");
    write_bytes(path, 0, hdr, 0);
    expect_load_error("mnist", dir, path, "truncated header: expected 16 bytes, found 0");
}

static void test_idx_trailing_bytes(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "trailing");
    write_mnist_dir(dir, 1);
    const uint8_t lb[N_TEST + 1] = {1, 2, 3, 4};
    const uint32_t dims[1] = {N_TEST};
    path_in(path, sizeof path, dir, "t10k-labels-idx1-ubyte.gz");
    write_idx(path, 1, 0x801, dims, 1, lb, sizeof lb);
    expect_load_error("fashion-mnist", dir, path, "trailing bytes after data");
}

static void test_idx_count_mismatch(void **state)
{
    char dir[512], ipath[600], lpath[600];
    fresh_dir(dir, sizeof dir, "mismatch");
    write_mnist_dir(dir, 0);
    const uint8_t lb[N_TRAIN - 1] = {1, 2, 3, 4};
    const uint32_t dims[1] = {N_TRAIN - 1};
    path_in(ipath, sizeof ipath, dir, "train-images-idx3-ubyte");
    path_in(lpath, sizeof lpath, dir, "train-labels-idx1-ubyte");
    write_idx(lpath, 0, 0x801, dims, 1, lb, sizeof lb);
    expect_load_error("mnist", dir, ipath, "5 images but");
    expect_load_error("mnist", dir, lpath, "has 4 labels");
}

static void test_idx_bad_label(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "bad_label");
    write_mnist_dir(dir, 0);
    const uint8_t lb[N_TEST] = {9, 0, 10};
    const uint32_t dims[1] = {N_TEST};
    path_in(path, sizeof path, dir, "t10k-labels-idx1-ubyte");
    write_idx(path, 0, 0x801, dims, 1, lb, sizeof lb);
    expect_load_error("mnist", dir, path, "label 10 at index 2");
}

static void test_idx_bad_shape(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "bad_shape");
    write_mnist_dir(dir, 0);
    uint8_t px[N_TRAIN * IMG] = {0};
    const uint32_t dims[3] = {N_TRAIN, 27, 28};
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte");
    write_idx(path, 0, 0x803, dims, 3, px, N_TRAIN * 27 * 28);
    expect_load_error("mnist", dir, path, "images are 27x28, expected 28x28");
    const uint32_t zero[3] = {0, SIDE, SIDE};
    write_idx(path, 0, 0x803, zero, 3, px, 0);
    expect_load_error("mnist", dir, path, "bad IDX dimension 0");
    /* A header claiming 2^32-ish bytes must be refused before allocation. */
    const uint32_t huge[3] = {0xffffffu, 0xffffu, SIDE};
    write_idx(path, 0, 0x803, huge, 3, px, 16);
    expect_load_error("mnist", dir, path, "too large");
}

static void test_idx_missing_file(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "missing");
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte");
    expect_load_error("mnist", dir, path, "No such file or directory");
    expect_load_error("mnist", dir, "train-images-idx3-ubyte.gz", "No such file or directory");
    /* Only the test labels missing. */
    write_mnist_dir(dir, 1);
    path_in(path, sizeof path, dir, "t10k-labels-idx1-ubyte.gz");
    assert_int_equal(unlink(path), 0);
    path_in(path, sizeof path, dir, "t10k-labels-idx1-ubyte");
    expect_load_error("fashion-mnist", dir, path, strerror(ENOENT));
    /* A missing directory. */
    path_in(path, sizeof path, dir, "nowhere");
    expect_load_error("mnist", path, path, "No such file or directory");
}

static void test_idx_corrupt_gzip(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "corrupt_gz");
    write_mnist_dir(dir, 1);
    /* A valid gzip member header, then a deflate block of the reserved
     * type 3, which inflate rejects at once. */
    uint8_t junk[200] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03};
    memset(junk + 10, 0xff, sizeof junk - 10);
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte.gz");
    write_bytes(path, 0, junk, sizeof junk);
    expect_load_error("fashion-mnist", dir, path, "corrupt gzip stream");
    expect_load_error("fashion-mnist", dir, path, "invalid block type");
}

/* Intact deflate data with a wrong CRC in the gzip trailer: only seen when
 * the reader goes on past the last data byte. */
static void test_idx_gzip_bad_crc(void **state)
{
    char dir[512], path[600];
    static uint8_t buf[1 << 16];
    fresh_dir(dir, sizeof dir, "bad_crc");
    write_mnist_dir(dir, 1);
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte.gz");
    size_t n = read_bytes(path, buf, sizeof buf);
    assert_true(n > 18 && n < sizeof buf);
    buf[n - 8] ^= 0x01; /* first byte of the CRC-32 */
    write_bytes(path, 0, buf, n);
    expect_load_error("fashion-mnist", dir, path, "corrupt gzip stream");
    expect_load_error("fashion-mnist", dir, path, "incorrect data check");
}

/* A .gz cut off halfway: either zlib's message or "truncated", but always
 * the file. */
static void test_idx_gzip_cut(void **state)
{
    char dir[512], path[600], err[512] = "";
    static uint8_t buf[1 << 16];
    fresh_dir(dir, sizeof dir, "cut_gz");
    write_mnist_dir(dir, 1);
    path_in(path, sizeof path, dir, "train-images-idx3-ubyte.gz");
    size_t n = read_bytes(path, buf, sizeof buf);
    write_bytes(path, 0, buf, n / 2);
    struct dataset tr, te;
    assert_int_equal(data_load("fashion-mnist", dir, 1, &tr, &te, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_true(strstr(err, "corrupt gzip stream") || strstr(err, "truncated"));
    assert_zeroed(&tr);
}

static void test_load_bad_args(void **state)
{
    expect_load_error("mnist", NULL, "mnist", "--data-dir is required");
    expect_load_error("mnist", "", "mnist", "--data-dir is required");
    expect_load_error("cifar10", NULL, "cifar10", "--data-dir is required");
    expect_load_error("imagenet", "/tmp", "imagenet", "unknown data set");
}

/* ---- CIFAR-10 ------------------------------------------------------------- */

static const int cifar_counts[6] = {3, 3, 2, 3, 1, 3}; /* data_batch_1..5, test_batch */

static uint8_t cifar_pixel(int file, int rec, int ch, int k)
{
    return (uint8_t)(file * 50 + rec * 13 + ch * 85 + k * 7 + k / 32);
}

static uint8_t cifar_label(int file, int rec)
{
    return (uint8_t)((file * 3 + rec) % 10);
}

static const char *cifar_file(int file)
{
    static const char *const names[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                         "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    return names[file];
}

static void write_cifar_file(const char *dir, int file, int records, int bad_label_at)
{
    char path[600];
    uint8_t *buf = malloc((size_t)records * CIFAR_REC);
    assert_non_null(buf);
    for (int r = 0; r < records; r++) {
        uint8_t *rec = buf + (size_t)r * CIFAR_REC;
        rec[0] = r == bad_label_at ? 12 : cifar_label(file, r);
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 1024; k++)
                rec[1 + c * 1024 + k] = cifar_pixel(file, r, c, k);
    }
    path_in(path, sizeof path, dir, cifar_file(file));
    write_bytes(path, 0, buf, (size_t)records * CIFAR_REC);
    free(buf);
}

static void write_cifar_dir(const char *dir)
{
    for (int f = 0; f < 6; f++)
        write_cifar_file(dir, f, cifar_counts[f], -1);
}

static void check_cifar(const struct dataset *tr, const struct dataset *te, const char *source)
{
    static const float mean[3] = {0.4914f, 0.4822f, 0.4465f};
    static const float std[3] = {0.2470f, 0.2435f, 0.2616f};
    assert_string_equal(tr->name, "cifar10");
    assert_string_equal(tr->source, source);
    assert_int_equal(tr->n, 3 + 3 + 2 + 3 + 1);
    assert_int_equal(te->n, 3);
    for (int s = 0; s < 2; s++) {
        const struct dataset *d = s ? te : tr;
        assert_int_equal(d->c, 3);
        assert_int_equal(d->h, 32);
        assert_int_equal(d->w, 32);
        assert_int_equal(d->classes, 10);
        for (int c = 0; c < 3; c++) {
            assert_true(d->mean[c] == mean[c]);
            assert_true(d->std[c] == std[c]);
        }
    }
    int at = 0;
    for (int f = 0; f < 5; f++)
        for (int r = 0; r < cifar_counts[f]; r++, at++) {
            assert_int_equal(tr->labels[at], cifar_label(f, r));
            for (int c = 0; c < 3; c++)
                for (int k = 0; k < 1024; k++)
                    assert_int_equal(tr->pixels[(size_t)at * CIFAR_PIX + c * 1024 + k], cifar_pixel(f, r, c, k));
        }
    for (int r = 0; r < 3; r++)
        assert_int_equal(te->labels[r], cifar_label(5, r));

    /* Gather: sample 8 is data_batch_4.bin record 0; each plane must use
     * its own channel's constants. */
    static float x[2 * CIFAR_PIX];
    const uint32_t idx[2] = {8, 0};
    int32_t y[2];
    data_gather(tr, idx, 2, x, y);
    assert_int_equal(y[0], cifar_label(3, 0));
    assert_int_equal(y[1], cifar_label(0, 0));
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 1024; k++) {
            float want0 = ((float)cifar_pixel(3, 0, c, k) / 255.0f - mean[c]) / std[c];
            float want1 = ((float)cifar_pixel(0, 0, c, k) / 255.0f - mean[c]) / std[c];
            assert_true(x[c * 1024 + k] == want0);
            assert_true(x[CIFAR_PIX + c * 1024 + k] == want1);
        }
}

static void test_cifar_roundtrip(void **state)
{
    char dir[512], err[512] = "";
    fresh_dir(dir, sizeof dir, "cifar");
    write_cifar_dir(dir);
    struct dataset tr, te;
    assert_int_equal(data_load("cifar10", dir, 1, &tr, &te, err, sizeof err), 0);
    check_cifar(&tr, &te, dir);
    data_free(&tr);
    data_free(&te);
}

static void test_cifar_subdir(void **state)
{
    char dir[512], sub[600], err[512] = "";
    fresh_dir(dir, sizeof dir, "cifar_parent");
    path_in(sub, sizeof sub, dir, "cifar-10-batches-bin");
    assert_int_equal(mkdir(sub, 0700), 0);
    write_cifar_dir(sub);
    struct dataset tr, te;
    assert_int_equal(data_load("cifar10", dir, 1, &tr, &te, err, sizeof err), 0);
    check_cifar(&tr, &te, sub);
    data_free(&tr);
    data_free(&te);
}

static void test_cifar_bad_size(void **state)
{
    char dir[512], path[600];
    static uint8_t buf[2 * CIFAR_REC + 5];
    fresh_dir(dir, sizeof dir, "cifar_size");
    write_cifar_dir(dir);
    path_in(path, sizeof path, dir, "data_batch_2.bin");
    write_bytes(path, 0, buf, sizeof buf);
    expect_load_error("cifar10", dir, path, "size 6151 bytes is not a nonzero multiple of 3073");
    write_bytes(path, 0, buf, 0);
    expect_load_error("cifar10", dir, path, "size 0 bytes");
}

static void test_cifar_missing_batch(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "cifar_missing");
    write_cifar_dir(dir);
    path_in(path, sizeof path, dir, "data_batch_3.bin");
    assert_int_equal(unlink(path), 0);
    expect_load_error("cifar10", dir, path, "No such file or directory");
    write_cifar_file(dir, 2, 1, -1);
    path_in(path, sizeof path, dir, "test_batch.bin");
    assert_int_equal(unlink(path), 0);
    expect_load_error("cifar10", dir, path, "No such file or directory");
}

static void test_cifar_bad_label(void **state)
{
    char dir[512], path[600];
    fresh_dir(dir, sizeof dir, "cifar_label");
    write_cifar_dir(dir);
    write_cifar_file(dir, 5, 3, 1);
    path_in(path, sizeof path, dir, "test_batch.bin");
    expect_load_error("cifar10", dir, path, "label 12 at record 1");
}

/* ---- anything but a regular file, and the in-memory readers --------------- */

/* A reader that opened a FIFO would wait for a writer for ever: end the
 * test instead. */
#define HANG_LIMIT_S 30

static void test_not_regular_files(void **state)
{
    char dir[512], path[600];
    alarm(HANG_LIMIT_S);
    fresh_dir(dir, sizeof dir, "fifo_idx");
    write_mnist_dir(dir, 0);
    path_in(path, sizeof path, dir, "train-labels-idx1-ubyte");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    expect_load_error("mnist", dir, path, "not a regular file (a FIFO)");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/dev/zero", path), 0);
    expect_load_error("mnist", dir, path, "not a regular file (a character device)");

    fresh_dir(dir, sizeof dir, "fifo_cifar");
    write_cifar_dir(dir);
    path_in(path, sizeof path, dir, "data_batch_4.bin");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    expect_load_error("cifar10", dir, path, "not a regular file (a FIFO)");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0700), 0);
    expect_load_error("cifar10", dir, path, "not a regular file (a directory)");
    alarm(0);
}

/* idx_parse takes a whole file's bytes, raw or gzip, with idx_read's
 * checks and messages. */
static void test_idx_parse_memory(void **state)
{
    char dir[512], path[600], err[512] = "";
    static uint8_t file[1 << 16];
    fresh_dir(dir, sizeof dir, "idx_memory");
    uint8_t px[2 * 3 * 4];
    for (int i = 0; i < (int)sizeof px; i++)
        px[i] = (uint8_t)(i * 7);
    const uint32_t dims[3] = {2, 3, 4};
    for (int gz = 0; gz < 2; gz++) {
        path_in(path, sizeof path, dir, gz ? "i.gz" : "i");
        write_idx(path, gz, 0x803, dims, 3, px, sizeof px);
        size_t n = read_bytes(path, file, sizeof file);
        int got_dims[3];
        uint8_t *got = idx_parse(file, n, "mem", 3, got_dims, err, sizeof err);
        assert_non_null(got);
        assert_memory_equal(got, px, sizeof px);
        assert_int_equal(got_dims[2], 4);
        free(got);
        assert_null(idx_parse(file, n - 1, "mem", 3, got_dims, err, sizeof err));
        assert_non_null(strstr(err, gz ? "mem: corrupt gzip stream" : "mem: truncated: expected 24 bytes"));
    }
    int d[3];
    assert_null(idx_parse(file, 0, "empty", 1, d, err, sizeof err));
    assert_string_equal(err, "empty: truncated header: expected 8 bytes, found 0");
}

/* cifar_parse takes one batch file's bytes with the loader's checks. */
static void test_cifar_parse_memory(void **state)
{
    char dir[512], path[600], err[512] = "";
    static uint8_t file[4 * CIFAR_REC];
    fresh_dir(dir, sizeof dir, "cifar_memory");
    write_cifar_file(dir, 5, 3, -1);
    path_in(path, sizeof path, dir, cifar_file(5));
    size_t n = read_bytes(path, file, sizeof file);
    assert_int_equal(n, 3 * CIFAR_REC);
    struct dataset d;
    assert_int_equal(cifar_parse(file, n, "mem", &d, err, sizeof err), 0);
    assert_int_equal(d.n, 3);
    assert_int_equal(d.c, 3);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(d.labels[r], cifar_label(5, r));
        assert_int_equal(d.pixels[(size_t)r * CIFAR_PIX + 1024 + 9], cifar_pixel(5, r, 1, 9));
    }
    data_free(&d);
    assert_int_equal(cifar_parse(file, n - 1, "mem", &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "mem: size 9218 bytes is not a nonzero multiple of 3073"));
    assert_zeroed(&d);
    file[CIFAR_REC] = 10;
    assert_int_equal(cifar_parse(file, n, "mem", &d, err, sizeof err), -1);
    assert_string_equal(err, "mem: label 10 at record 1 is out of range (expected 0..9)");
    assert_zeroed(&d);
}

/* ---- synthetic ------------------------------------------------------------ */

/* The test accuracy, over test's first ntest samples, of the classifier
 * that picks the class whose train mean image is nearest. */
static double nearest_mean_accuracy(const struct dataset *train, const struct dataset *test, int ntest)
{
    size_t img = (size_t)train->c * (size_t)train->h * (size_t)train->w;
    double *centre = calloc(10 * img, sizeof(double));
    assert_non_null(centre);
    int count[10] = {0};
    for (int i = 0; i < train->n; i++) {
        count[train->labels[i]]++;
        for (size_t k = 0; k < img; k++)
            centre[train->labels[i] * img + k] += train->pixels[(size_t)i * img + k];
    }
    for (int j = 0; j < 10; j++)
        for (size_t k = 0; k < img; k++)
            centre[(size_t)j * img + k] /= count[j];
    int right = 0;
    for (int i = 0; i < ntest; i++) {
        int best = -1;
        double best_d = 0;
        for (int j = 0; j < 10; j++) {
            double dist = 0;
            for (size_t k = 0; k < img; k++) {
                double diff = test->pixels[(size_t)i * img + k] - centre[(size_t)j * img + k];
                dist += diff * diff;
            }
            if (best < 0 || dist < best_d) {
                best = j;
                best_d = dist;
            }
        }
        right += best == test->labels[i];
    }
    free(centre);
    return (double)right / ntest;
}

static void test_synthetic(void **state)
{
    struct dataset a, at, b, bt, c, ct;
    char err[512] = "";
    assert_int_equal(data_load("synthetic", NULL, 42, &a, &at, err, sizeof err), 0);
    assert_int_equal(data_load("synthetic", "/ignored", 42, &b, &bt, err, sizeof err), 0);
    assert_int_equal(data_load("synthetic", NULL, 43, &c, &ct, err, sizeof err), 0);

    assert_string_equal(a.name, "synthetic");
    assert_string_equal(a.source, "generated");
    assert_int_equal(a.n, 60000);
    /* the same bytes on any machine, build or thread count, and the same as
     * the generator's first, plain version made (its clamp of each pixel
     * in floats, then the rounding): the CRC-32s that version gave, from a
     * harness that called it for seed 42 at 1x28x28, 60000 images
     * (commit 8fac3be's src/data_synth.c) */
    assert_int_equal(crc32(0, a.pixels, (uInt)((size_t)a.n * 28 * 28)), 0xce9b71feUL);
    assert_int_equal(crc32(0, a.labels, (uInt)a.n), 0x8d695353UL);
    assert_int_equal(at.n, 10000);
    for (int s = 0; s < 2; s++) {
        const struct dataset *d = s ? &at : &a;
        assert_int_equal(d->c, 1);
        assert_int_equal(d->h, 28);
        assert_int_equal(d->w, 28);
        assert_int_equal(d->classes, 10);
        assert_true(d->mean[0] > 0.05f && d->mean[0] < 0.95f);
        assert_true(d->std[0] > 0.05f && d->std[0] < 0.6f);
    }
    assert_true(a.mean[0] == at.mean[0] && a.std[0] == at.std[0]);

    /* Same seed: byte for byte. */
    assert_memory_equal(a.pixels, b.pixels, (size_t)a.n * IMG);
    assert_memory_equal(a.labels, b.labels, (size_t)a.n);
    assert_memory_equal(at.pixels, bt.pixels, (size_t)at.n * IMG);
    assert_memory_equal(at.labels, bt.labels, (size_t)at.n);
    /* Another seed: different data, and train differs from test. */
    assert_int_equal(c.n, a.n);
    assert_true(memcmp(a.pixels, c.pixels, (size_t)a.n * IMG) != 0);
    assert_true(memcmp(a.labels, c.labels, (size_t)a.n) != 0);
    assert_true(memcmp(a.pixels, at.pixels, (size_t)at.n * IMG) != 0);

    /* Every class present and none dominant, in both splits. */
    for (int s = 0; s < 2; s++) {
        const struct dataset *d = s ? &at : &a;
        int hist[256] = {0};
        for (int i = 0; i < d->n; i++)
            hist[d->labels[i]]++;
        for (int k = 0; k < 10; k++)
            assert_true(hist[k] > d->n / 20 && hist[k] < d->n / 5);
        for (int k = 10; k < 256; k++)
            assert_int_equal(hist[k], 0);
    }

    /* Learnable but not trivial: a nearest-class-mean classifier fitted on
     * train must beat chance by far on test, yet stay short of perfect. */
    double acc = nearest_mean_accuracy(&a, &at, at.n);
    print_message("synthetic: nearest-class-mean test accuracy %.1f%%\n", 100.0 * acc);
    assert_true(acc > 0.5 && acc < 0.99);

    data_free(&a);
    data_free(&at);
    data_free(&b);
    data_free(&bt);
    data_free(&c);
    data_free(&ct);
}

/* --input: other shapes of the same set. 1x28x28 is the default set byte
 * for byte; 3x32x32 has CIFAR-10's shape, a tint per class (so the three
 * channels differ), every class, and stays learnable by a nearest-class
 * mean; a large shape keeps fewer samples (256 MB of train pixels); bad
 * shapes are refused with the limits. */
static void test_synthetic_shapes(void **state)
{
    struct dataset a, at, d, dt;
    char err[512] = "";
    assert_int_equal(data_load("synthetic", NULL, 5, &a, &at, err, sizeof err), 0);
    assert_int_equal(data_synthetic(5, 1, 28, 28, &d, &dt, err, sizeof err), 0);
    assert_string_equal(d.name, "synthetic");
    assert_int_equal(d.n, a.n);
    assert_memory_equal(d.pixels, a.pixels, (size_t)a.n * IMG);
    assert_memory_equal(dt.labels, at.labels, (size_t)at.n);
    data_free(&a);
    data_free(&at);
    data_free(&d);
    data_free(&dt);

    enum { C = 3, S = 32 };
    assert_int_equal(data_synthetic(5, C, S, S, &d, &dt, err, sizeof err), 0);
    assert_string_equal(d.name, "synth-3x32x32");
    /* CIFAR-10's shape, CIFAR-10's sizes: 5 training files of 10000 images
     * and a test file of 10000 */
    assert_int_equal(d.n, 5 * 10000);
    assert_int_equal(dt.n, 10000);
    assert_true(d.c == C && d.h == S && d.w == S && dt.c == C && dt.h == S && dt.w == S);
    /* (as at 1x28x28 above: that version's CRC-32s for seed 5, 50000 images) */
    assert_int_equal(crc32(0, d.pixels, (uInt)((size_t)d.n * C * S * S)), 0x2aa585dbUL);
    assert_int_equal(crc32(0, d.labels, (uInt)d.n), 0xa215d89eUL);
    for (int ch = 0; ch < C; ch++) {
        assert_true(d.mean[ch] > 0.02f && d.mean[ch] < 0.95f && d.std[ch] > 0.02f);
        assert_true(d.mean[ch] == dt.mean[ch] && d.std[ch] == dt.std[ch]);
    }
    assert_true(d.mean[0] != d.mean[1] || d.mean[1] != d.mean[2]);
    int hist[10] = {0};
    for (int i = 0; i < dt.n; i++)
        hist[dt.labels[i]]++;
    for (int k = 0; k < 10; k++)
        assert_true(hist[k] > dt.n / 20);
    /* learnable: the nearest class mean of train, on test */
    double acc = nearest_mean_accuracy(&d, &dt, 2000);
    print_message("synthetic 3x32x32: nearest-class-mean test accuracy %.1f%%\n", 100.0 * acc);
    assert_true(acc > 0.5 && acc < 0.99);
    data_free(&d);
    data_free(&dt);

    /* 3x224x224: 256 MB of train pixels at most, a sixth as many to test */
    assert_int_equal(data_synthetic(5, 3, 224, 224, &d, &dt, err, sizeof err), 0);
    assert_int_equal(d.n, (int)((256u << 20) / (3 * 224 * 224)));
    assert_int_equal(dt.n, d.n / 6);
    data_free(&d);
    data_free(&dt);

    assert_int_equal(data_synthetic(5, 4, 32, 32, &d, &dt, err, sizeof err), -1);
    assert_non_null(strstr(err, "channels are 1 to 3, sides 8 to 1024"));
    assert_int_equal(data_synthetic(5, 1, 7, 32, &d, &dt, err, sizeof err), -1);
    assert_int_equal(data_synthetic(5, 1, 32, 1025, &d, &dt, err, sizeof err), -1);
}

/* ---- names ---------------------------------------------------------------- */

static void test_names(void **state)
{
    int n = 0;
    while (data_names[n])
        n++;
    assert_int_equal(n, 4);
    assert_string_equal(data_names[0], "fashion-mnist");
    assert_true(data_known("fashion-mnist"));
    assert_true(data_known("mnist"));
    assert_true(data_known("cifar10"));
    assert_true(data_known("synthetic"));
    assert_false(data_known("cifar100"));
    assert_false(data_known("MNIST"));
    assert_false(data_known(""));
    assert_false(data_known(NULL));
    struct stat st;
    int have = stat(DATA_DEBIAN_FASHION_DIR "/train-images-idx3-ubyte.gz", &st) == 0 ||
               stat(DATA_DEBIAN_FASHION_DIR "/train-images-idx3-ubyte", &st) == 0;
    assert_string_equal(data_default_name(), have ? "fashion-mnist" : "synthetic");
    assert_true(data_known(data_default_name()));
}

/* ---- sampler -------------------------------------------------------------- */

#define SN 841 /* 840 = lcm(1..8), so n % world == 1 for every world 2..8 */

static void test_sampler_partition(void **state)
{
    static struct sampler s[8];
    static int seen[SN];
    for (int world = 1; world <= 8; world++) {
        for (int r = 0; r < world; r++) {
            assert_int_equal(sampler_init(&s[r], SN, world, r, 1234), 0);
            sampler_set_epoch(&s[r], 3);
            assert_int_equal(s[r].per_rank, SN / world);
            assert_int_equal(s[r].n, SN);
            assert_int_equal(s[r].world, world);
            assert_int_equal(s[r].rank, r);
            assert_memory_equal(s[r].perm, s[0].perm, SN * sizeof(uint32_t));
        }
        /* A permutation of 0..n-1, and not the identity. */
        memset(seen, 0, sizeof seen);
        int moved = 0;
        for (int i = 0; i < SN; i++) {
            assert_true(s[0].perm[i] < SN);
            seen[s[0].perm[i]]++;
            moved += s[0].perm[i] != (uint32_t)i;
        }
        for (int i = 0; i < SN; i++)
            assert_int_equal(seen[i], 1);
        assert_true(moved > SN / 2);

        /* Ranks are disjoint and together take exactly the first
         * per_rank * world entries of the permutation. */
        int per = SN / world;
        memset(seen, 0, sizeof seen);
        for (int r = 0; r < world; r++)
            for (int i = 0; i < per; i++) {
                uint32_t v = sampler_get(&s[r], i);
                assert_true(v < SN);
                assert_int_equal(seen[v], 0);
                seen[v] = 1;
                assert_int_equal(v, s[0].perm[(size_t)i * world + r]);
            }
        int taken = 0;
        for (int i = 0; i < per * world; i++) {
            assert_int_equal(seen[s[0].perm[i]], 1);
            taken++;
        }
        for (int i = per * world; i < SN; i++)
            assert_int_equal(seen[s[0].perm[i]], 0);
        assert_int_equal(taken, per * world);
        if (world > 1)
            assert_true(per * world < SN);
        for (int r = 0; r < world; r++)
            sampler_free(&s[r]);
    }
}

static void test_sampler_epochs(void **state)
{
    static uint32_t e0[SN], e1[SN];
    struct sampler s, t;
    assert_int_equal(sampler_init(&s, SN, 4, 2, 77), 0);
    memcpy(e0, s.perm, sizeof e0); /* init gives epoch 0 */
    sampler_set_epoch(&s, 0);
    assert_memory_equal(s.perm, e0, sizeof e0);
    sampler_set_epoch(&s, 1);
    memcpy(e1, s.perm, sizeof e1);
    assert_true(memcmp(e0, e1, sizeof e0) != 0);
    sampler_set_epoch(&s, 0);
    assert_memory_equal(s.perm, e0, sizeof e0);

    /* Same seed on another rank and world: same order; another seed differs. */
    assert_int_equal(sampler_init(&t, SN, 7, 6, 77), 0);
    sampler_set_epoch(&t, 1);
    assert_memory_equal(t.perm, e1, sizeof e1);
    sampler_free(&t);
    assert_int_equal(sampler_init(&t, SN, 4, 2, 78), 0);
    sampler_set_epoch(&t, 1);
    assert_true(memcmp(t.perm, e1, sizeof e1) != 0);
    sampler_free(&t);
    sampler_free(&s);
    assert_null(s.perm);
}

/* Fisher-Yates off by one (Sattolo's variant, or j drawn from 0..n-1) shows
 * up as missing or skewed permutations of 4 elements over many epochs. */
static void test_sampler_uniform(void **state)
{
    enum { EPOCHS = 24000 };
    int hist[256] = {0};
    struct sampler s;
    assert_int_equal(sampler_init(&s, 4, 1, 0, 5), 0);
    for (int e = 0; e < EPOCHS; e++) {
        sampler_set_epoch(&s, e);
        int code = (int)(s.perm[0] | s.perm[1] << 2 | s.perm[2] << 4 | s.perm[3] << 6);
        hist[code]++;
    }
    int distinct = 0;
    for (int i = 0; i < 256; i++) {
        if (!hist[i])
            continue;
        distinct++;
        assert_true(hist[i] > 800 && hist[i] < 1200); /* expected 1000, sd about 31 */
    }
    assert_int_equal(distinct, 24);
    sampler_free(&s);
}

static void test_sampler_bad_args(void **state)
{
    struct sampler s;
    assert_int_equal(sampler_init(&s, 0, 1, 0, 1), -1);
    assert_null(s.perm);
    assert_int_equal(sampler_init(&s, -5, 1, 0, 1), -1);
    assert_int_equal(sampler_init(&s, 10, 0, 0, 1), -1);
    assert_int_equal(sampler_init(&s, 10, -1, 0, 1), -1);
    assert_int_equal(sampler_init(&s, 10, 2, -1, 1), -1);
    assert_int_equal(sampler_init(&s, 10, 2, 2, 1), -1);
    assert_int_equal(sampler_init(&s, 3, 4, 0, 1), -1); /* per_rank would be 0 */
    assert_null(s.perm);
    sampler_free(&s);
    assert_int_equal(sampler_init(&s, 4, 4, 3, 1), 0);
    assert_int_equal(s.per_rank, 1);
    sampler_free(&s);
}

/* ---- the installed Fashion-MNIST ------------------------------------------ */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void test_debian_fashion(void **state)
{
    struct dataset tr, te;
    char err[512] = "";
    double t0 = now_s();
    int rc = data_load("fashion-mnist", NULL, 1, &tr, &te, err, sizeof err);
    double dt = now_s() - t0;
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    print_message("fashion-mnist: loaded %d + %d images in %.3f s\n", tr.n, te.n, dt);
    assert_string_equal(tr.source, DATA_DEBIAN_FASHION_DIR);
    assert_int_equal(tr.n, 60000);
    assert_int_equal(te.n, 10000);
    for (int s = 0; s < 2; s++) {
        const struct dataset *d = s ? &te : &tr;
        assert_int_equal(d->c, 1);
        assert_int_equal(d->h, 28);
        assert_int_equal(d->w, 28);
        /* Fashion-MNIST is exactly balanced: 6000 / 1000 per class. */
        int hist[10] = {0};
        for (int i = 0; i < d->n; i++) {
            assert_true(d->labels[i] < 10);
            hist[d->labels[i]]++;
        }
        for (int k = 0; k < 10; k++)
            assert_int_equal(hist[k], d->n / 10);
    }
    /* The published mean, measured: within rounding of 0.2860. */
    uint64_t sum = 0;
    for (size_t i = 0; i < (size_t)tr.n * IMG; i++)
        sum += tr.pixels[i];
    double mean = (double)sum / ((double)tr.n * IMG) / 255.0;
    assert_true(mean > 0.2855 && mean < 0.2865);
    data_free(&tr);
    data_free(&te);
}

/* ---- main ----------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static int group_setup(void **state)
{
    snprintf(g_root, sizeof g_root, "/tmp/ddptop_test_data.XXXXXX");
    return mkdtemp(g_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
    return nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        struct stat st;
        if (strcmp(argv[1], "fashion") != 0) {
            fprintf(stderr, "usage: %s [fashion]\n", argv[0]);
            return 2;
        }
        if (stat(DATA_DEBIAN_FASHION_DIR, &st) != 0) {
            printf("SKIP: no %s (Debian's dataset-fashion-mnist)\n", DATA_DEBIAN_FASHION_DIR);
            return 77;
        }
        const struct CMUnitTest fashion[] = {cmocka_unit_test(test_debian_fashion)};
        return cmocka_run_group_tests(fashion, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_roundtrip_raw),
        cmocka_unit_test(test_idx_roundtrip_gz),
        cmocka_unit_test(test_idx_mixed_and_precedence),
        cmocka_unit_test(test_idx_read_dims),
        cmocka_unit_test(test_idx_bad_magic),
        cmocka_unit_test(test_idx_truncated_data),
        cmocka_unit_test(test_idx_truncated_header),
        cmocka_unit_test(test_idx_trailing_bytes),
        cmocka_unit_test(test_idx_count_mismatch),
        cmocka_unit_test(test_idx_bad_label),
        cmocka_unit_test(test_idx_bad_shape),
        cmocka_unit_test(test_idx_missing_file),
        cmocka_unit_test(test_idx_corrupt_gzip),
        cmocka_unit_test(test_idx_gzip_bad_crc),
        cmocka_unit_test(test_idx_gzip_cut),
        cmocka_unit_test(test_load_bad_args),
        cmocka_unit_test(test_cifar_roundtrip),
        cmocka_unit_test(test_cifar_subdir),
        cmocka_unit_test(test_cifar_bad_size),
        cmocka_unit_test(test_cifar_missing_batch),
        cmocka_unit_test(test_cifar_bad_label),
        cmocka_unit_test(test_not_regular_files),
        cmocka_unit_test(test_idx_parse_memory),
        cmocka_unit_test(test_cifar_parse_memory),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_synthetic_shapes),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_sampler_partition),
        cmocka_unit_test(test_sampler_epochs),
        cmocka_unit_test(test_sampler_uniform),
        cmocka_unit_test(test_sampler_bad_args),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
