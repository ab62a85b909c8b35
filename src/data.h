/* data.h - data sets and the distributed sampler.
 *
 * Images are kept as the uint8 pixels of the file (N x C x H x W, channel
 * planes as CIFAR-10 stores them) and normalised to float32 when a batch is
 * gathered, so a 50k-image CIFAR-10 costs 150 MB, not 600 MB, and data
 * loading is real, measurable work. A data set is read-only once loaded and
 * shared by every rank thread.
 */
#ifndef DDPTOP_DATA_H
#define DDPTOP_DATA_H

#include <stddef.h>
#include <stdint.h>

#define DATA_CLASSES 10 /* every set's: MNIST's digits, Fashion-MNIST's and CIFAR-10's classes */
#define DATA_MAX_CHANNELS 3
#define DATA_MIN_SIDE 8 /* --input's sides, for the synthetic set */
#define DATA_MAX_SIDE 1024

struct dataset {
    char name[32];    /* "fashion-mnist", "mnist", "cifar10", "synthetic" */
    char source[512]; /* directory or "generated" */
    int n;            /* samples */
    int c, h, w;      /* per-sample shape */
    int classes;
    uint8_t *pixels;               /* n * c*h*w */
    uint8_t *labels;               /* n */
    float mean[DATA_MAX_CHANNELS]; /* normalisation, per channel, in [0,1] pixel units */
    float std[DATA_MAX_CHANNELS];
};

/* Known data set names, for --help and validation. */
extern const char *const data_names[]; /* NULL-terminated */
int data_known(const char *name);

/* Where the Debian dataset-fashion-mnist package puts its files. */
#define DATA_DEBIAN_FASHION_DIR "/usr/share/datasets/fashion-mnist"

/* The embedded default: "fashion-mnist" when the Debian package's files are
 * present, otherwise "synthetic". */
const char *data_default_name(void);

/* Loads the train and test splits of `name` from `dir` (NULL or "" means the
 * default place for that data set: DATA_DEBIAN_FASHION_DIR for
 * fashion-mnist, otherwise an error). For "synthetic", dir is ignored and
 * the data is generated from `seed` (shape 1x28x28, 10 classes, learnable).
 * mnist / fashion-mnist: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each
 * either raw or with a .gz suffix (gzip, read through zlib).
 * cifar10: data_batch_1.bin .. data_batch_5.bin and test_batch.bin, either in
 * dir itself or in dir/cifar-10-batches-bin.
 * Only regular files are read. On error returns -1 and writes one line
 * naming the file and what is wrong into err. */
int data_load(const char *name, const char *dir, uint64_t seed, struct dataset *train, struct dataset *test, char *err,
              size_t errlen);
void data_free(struct dataset *d);
/* The files data_load(name, dir) may read, in every form it takes them
 * (raw or .gz; CIFAR's in dir or in dir/cifar-10-batches-bin), whether
 * they exist or not: up to max paths into out. Returns how many (0 for
 * synthetic data). */
#define DATA_PATH 4200
int data_files(const char *name, const char *dir, char (*out)[DATA_PATH], int max);
/* The synthetic set in another shape (--input CxHxW): c channels (1 to
 * DATA_MAX_CHANNELS), sides DATA_MIN_SIDE to DATA_MAX_SIDE; 1x28x28 is
 * data_load's "synthetic". In a real set's shape it has that set's sizes
 * (3x32x32: CIFAR-10's 50000 training and 10000 test samples), in any
 * other MNIST's (60000 and 10000). A large shape keeps fewer samples (256
 * MB of train pixels at most, a sixth as many test samples). -1 with err
 * set. */
int data_synthetic(uint64_t seed, int c, int h, int w, struct dataset *train, struct dataset *test, char *err,
                   size_t errlen);

/* Reads one IDX file (raw or gzip'd) and checks its header: magic 0x0000080N
 * (unsigned bytes) with N == want_dims, then dims, then exactly
 * prod(dims) bytes of data and nothing more. dims_out receives the sizes
 * (entries past want_dims are set to 1). Label values are not checked here.
 * Returns a malloc'd buffer or NULL with err set. */
uint8_t *idx_read(const char *path, int want_dims, int dims_out[3], char *err, size_t errlen);
/* The same checks on a whole IDX file's bytes in memory (raw or gzip), for
 * tests and fuzzers; name stands for the file in err. */
uint8_t *idx_parse(const void *buf, size_t n, const char *name, int want_dims, int dims_out[3], char *err,
                   size_t errlen);
/* One CIFAR-10 batch file's bytes in memory into d (name as its source),
 * with every check the loader makes. Returns 0, or -1 with err set and d
 * left empty. */
int cifar_parse(const void *buf, size_t n, const char *name, struct dataset *d, char *err, size_t errlen);

/* Normalised float32 copy of samples idx[0..count) into x (count x c*h*w)
 * and their labels into y. Every idx[i] must be < d->n. */
void data_gather(const struct dataset *d, const uint32_t *idx, int count, float *x, int32_t *y);

/* Distributed sampler: each epoch a seeded shuffle of 0..n-1, identical on
 * every rank; rank r takes positions r, r+world, r+2*world, ... The tail is
 * dropped so every rank gets exactly per_rank = n / world samples. */
struct sampler {
    int n, world, rank;
    int per_rank;
    uint64_t seed;
    uint32_t *perm; /* n */
};
int sampler_init(struct sampler *s, int n, int world, int rank, uint64_t seed);
void sampler_set_epoch(struct sampler *s, int epoch);
/* The i-th sample (0 <= i < per_rank) of this rank in the current epoch. */
static inline uint32_t sampler_get(const struct sampler *s, int i)
{
    return s->perm[(size_t)i * (size_t)s->world + (size_t)s->rank];
}
void sampler_free(struct sampler *s);

#endif
