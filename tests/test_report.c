/* test_report.c - the batch report through the real binary: the JSON schema
 * (documented in the README), CSV with the same columns, a sweep with
 * speedup against the 1-rank row, identical reports for identical seeds,
 * and LeNet on Fashion-MNIST reaching 85% test accuracy in one epoch. */
#include <cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static const char *bin(void)
{
    const char *b = getenv("DDPTOP_BIN");
    return b ? b : DDPTOP_BIN;
}

/* Runs ddptop with args; returns its stdout (malloc'd) and exit status. */
static char *run(const char *args, int *status)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null </dev/null", bin(), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (cap - n < 4096)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

static const char *run_fields[] = {"model",      "dataset",     "strategy",      "ranks",       "batch_size",
                                   "steps",      "ms_per_step", "samples_per_s", "speedup",     "compute_pct",
                                   "comm_pct",   "data_pct",    "idle_pct",      "overlap_pct", "bytes_sent",
                                   "busbw_gbps", "train_loss",  "train_acc",     "test_acc"};
static const char *rank_fields[] = {"rank",     "ms_per_step", "samples_per_s", "compute_pct", "comm_pct",
                                    "data_pct", "idle_pct",    "overlap_pct",   "bytes_sent",  "busbw_gbps"};

static void test_json_schema_and_sweep(void **state)
{
    int st;
    char *out = run("--batch --quiet --dataset synthetic --model lenet --ranks 1,2 --batch-size 16 --steps 12 "
                    "--format json",
                    &st);
    assert_int_equal(st, 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *runs = cJSON_GetObjectItem(root, "runs"), *per = cJSON_GetObjectItem(root, "per_rank");
    assert_true(cJSON_IsArray(runs) && cJSON_IsArray(per));
    assert_int_equal(cJSON_GetArraySize(runs), 2);
    assert_int_equal(cJSON_GetArraySize(per), 3);
    for (int i = 0; i < 2; i++) {
        cJSON *r = cJSON_GetArrayItem(runs, i);
        for (size_t f = 0; f < sizeof(run_fields) / sizeof(run_fields[0]); f++)
            if (!cJSON_HasObjectItem(r, run_fields[f]))
                fail_msg("runs[%d] lacks %s", i, run_fields[f]);
        double sum = cJSON_GetObjectItem(r, "compute_pct")->valuedouble +
                     cJSON_GetObjectItem(r, "comm_pct")->valuedouble + cJSON_GetObjectItem(r, "data_pct")->valuedouble +
                     cJSON_GetObjectItem(r, "idle_pct")->valuedouble;
        assert_true(sum > 99.999 && sum < 100.001);
        assert_int_equal(cJSON_GetObjectItem(r, "steps")->valueint, 12);
        /* a run cut short by --steps is still evaluated at its end */
        cJSON *acc = cJSON_GetObjectItem(r, "test_acc");
        assert_true(cJSON_IsNumber(acc) && acc->valuedouble > 10.0 && acc->valuedouble <= 100.0);
    }
    cJSON *r1 = cJSON_GetArrayItem(runs, 0), *r2 = cJSON_GetArrayItem(runs, 1);
    assert_int_equal(cJSON_GetObjectItem(r1, "ranks")->valueint, 1);
    assert_true(cJSON_GetObjectItem(r1, "speedup")->valuedouble == 1.0);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(r2, "speedup")));
    assert_true(cJSON_GetObjectItem(r2, "bytes_sent")->valuedouble > 0);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(r2, "busbw_gbps")));
    assert_true(cJSON_GetObjectItem(r1, "bytes_sent")->valuedouble == 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r1, "busbw_gbps"))); /* one rank moves nothing: n/a, not 0 */
    for (int i = 0; i < 3; i++) {
        cJSON *q = cJSON_GetArrayItem(per, i);
        for (size_t f = 0; f < sizeof(rank_fields) / sizeof(rank_fields[0]); f++)
            if (!cJSON_HasObjectItem(q, rank_fields[f]))
                fail_msg("per_rank[%d] lacks %s", i, rank_fields[f]);
    }
    cJSON_Delete(root);
    free(out);
}

static void test_csv_columns(void **state)
{
    int st;
    char *out =
        run("--batch --quiet --dataset synthetic --model mlp --ranks 2 --batch-size 16 --steps 5 --format csv", &st);
    assert_int_equal(st, 0);
    char *line2 = strchr(out, '\n');
    assert_non_null(line2);
    *line2++ = 0;
    for (size_t f = 0; f < sizeof(run_fields) / sizeof(run_fields[0]); f++) {
        char key[64];
        snprintf(key, sizeof(key), ",%s,", run_fields[f]);
        char hdr[4096];
        snprintf(hdr, sizeof(hdr), ",%s,", out);
        if (!strstr(hdr, key))
            fail_msg("CSV header lacks %s", run_fields[f]);
    }
    /* one "all" row and one row per rank, all with as many fields as the header */
    int cols = 1;
    for (char *c = out; *c; c++)
        cols += *c == ',';
    int rows = 0;
    for (char *l = line2; *l;) {
        char *e = strchr(l, '\n');
        if (!e)
            break;
        *e = 0;
        int k = 1;
        for (char *c = l; *c; c++)
            k += *c == ',';
        assert_int_equal(k, cols);
        rows++;
        l = e + 1;
    }
    assert_int_equal(rows, 3);
    free(out);
}

/* Identical seeds give identical reports (timings aside). */
static void test_same_seed_same_report(void **state)
{
    const char *args = "--batch --quiet --dataset synthetic --model lenet --ranks 2 --batch-size 16 --steps 40 "
                       "--strategy ddp --seed 5 --format json";
    int st;
    char *a = run(args, &st);
    assert_int_equal(st, 0);
    char *b = run(args, &st);
    assert_int_equal(st, 0);
    cJSON *ja = cJSON_Parse(a), *jb = cJSON_Parse(b);
    assert_non_null(ja);
    assert_non_null(jb);
    const char *det[] = {"train_loss", "train_acc", "test_acc", "bytes_sent", "steps"};
    cJSON *ra = cJSON_GetArrayItem(cJSON_GetObjectItem(ja, "runs"), 0);
    cJSON *rb = cJSON_GetArrayItem(cJSON_GetObjectItem(jb, "runs"), 0);
    for (size_t i = 0; i < sizeof(det) / sizeof(det[0]); i++) {
        cJSON *x = cJSON_GetObjectItem(ra, det[i]), *y = cJSON_GetObjectItem(rb, det[i]);
        assert_non_null(x);
        assert_true(cJSON_Compare(x, y, 1));
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    free(a);
    free(b);
    /* and a different seed gives a different loss */
    char *c = run("--batch --quiet --dataset synthetic --model lenet --ranks 2 --batch-size 16 --steps 40 "
                  "--strategy ddp --seed 6 --format json",
                  &st);
    cJSON *jc = cJSON_Parse(c);
    char *d = run(args, &st);
    ja = cJSON_Parse(d);
    free(d);
    assert_false(
        cJSON_Compare(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(ja, "runs"), 0), "train_loss"),
                      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(jc, "runs"), 0), "train_loss"), 1));
    cJSON_Delete(ja);
    cJSON_Delete(jc);
    free(c);
}

static void test_lenet_fashion_one_epoch(void **state)
{
    if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) != 0)
        skip(); /* the README's install command brings dataset-fashion-mnist */
    int st;
    char *out = run("--batch --quiet --model lenet --dataset fashion-mnist --ranks 2 --strategy allreduce --epochs 1 "
                    "--format json",
                    &st);
    assert_int_equal(st, 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0);
    double acc = cJSON_GetObjectItem(r, "test_acc")->valuedouble;
    printf("  LeNet, Fashion-MNIST, 2 ranks, 1 epoch: test accuracy %.2f%%\n", acc);
    assert_true(acc >= 85.0);
    cJSON_Delete(root);
    free(out);
}

static void test_loss_threshold(void **state)
{
    int st;
    char *out = run("--batch --quiet --dataset synthetic --model mlp --ranks 2 --steps 300 --loss-threshold 1.0 "
                    "--format json",
                    &st);
    assert_int_equal(st, 0);
    cJSON *root = cJSON_Parse(out);
    cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0);
    cJSON *s = cJSON_GetObjectItem(r, "threshold_step");
    assert_true(cJSON_IsNumber(s));
    assert_true(s->valuedouble > 0 && s->valuedouble < 300);
    assert_int_equal(cJSON_GetObjectItem(r, "threshold_epoch")->valueint, 1); /* epochs count from 1 */
    cJSON_Delete(root);
    free(out);
    out = run("--batch --quiet --dataset synthetic --model mlp --ranks 2 --steps 5 --loss-threshold 0.0001 "
              "--format json",
              &st);
    root = cJSON_Parse(out);
    r = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "threshold_step")));
    cJSON_Delete(root);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_schema_and_sweep),   cmocka_unit_test(test_csv_columns),
        cmocka_unit_test(test_same_seed_same_report),   cmocka_unit_test(test_loss_threshold),
        cmocka_unit_test(test_lenet_fashion_one_epoch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
