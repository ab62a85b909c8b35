/* test_trace_writer.c - the Chrome trace writer and exporter: number and
 * string formatting, whole-event batches (a file read before close is a
 * loadable prefix), a full disk (/dev/full), gzip, file naming, collective
 * matching by seq (transfer/sync), bucket flows, filters, and a reader that
 * survives a trace cut at every byte; every lane (main, comm, data, gpu)
 * reads back as the lane it was written on. Files are checked with cJSON.
 * `test_trace_writer diskfull` runs only the full-disk case, and exits 77
 * (SKIPPED) where /dev/full cannot be written (ctest:
 * test_trace_writer_diskfull). */
#include <cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "trace_export.h"
#include "trace_read.h"
#include "trace_writer.h"

static char g_dir[256];

static int setup(void **state)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/ddptop_test_trace_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void tmp_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = 0;
    fclose(f);
    if (n)
        *n = (size_t)len;
    return buf;
}

static cJSON *load_json(const char *path)
{
    size_t n;
    char *buf = slurp(path, &n);
    cJSON *j = cJSON_ParseWithLength(buf, n);
    free(buf);
    assert_non_null(j);
    return j;
}

static cJSON *events_of(cJSON *doc)
{
    cJSON *ev = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
    assert_true(cJSON_IsArray(ev));
    return ev;
}

static void test_format(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "fmt.json");
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, "\"displayTimeUnit\":\"ms\",", err, sizeof(err)), 0);
    trace_writer_begin(w, 'X', "a \"quoted\"\\name\n\x01", "forward", 3, 1, 1234567);
    trace_writer_dur(w, 999);
    trace_writer_args_begin(w);
    trace_writer_arg_us(w, "neg", -1500);
    trace_writer_arg_u64(w, "big", UINT64_MAX);
    trace_writer_arg_i64(w, "min", INT64_MIN + 1);
    trace_writer_arg_f64(w, "nan", 0.0 / 0.0);
    trace_writer_arg_f64(w, "x", 2.5);
    trace_writer_arg_str(w, "s", "tab\there");
    trace_writer_args_end(w);
    trace_writer_end(w);
    trace_writer_begin(w, 'X', "zero", "data", 0, 0, 0);
    trace_writer_dur(w, 0);
    trace_writer_end(w);
    assert_null(trace_writer_error(w));
    assert_int_equal(trace_writer_events(w), 2);
    assert_int_equal(trace_writer_close(w, ",\"tail\":1", err, sizeof(err)), 0);

    char *text = slurp(path, NULL);
    assert_non_null(strstr(text, "\"ts\":1234.567,\"dur\":0.999"));
    assert_non_null(strstr(text, "\"neg\":-1.500"));
    assert_non_null(strstr(text, "\"ts\":0.000,\"dur\":0.000"));
    free(text);
    cJSON *doc = load_json(path);
    cJSON *ev = events_of(doc);
    assert_int_equal(cJSON_GetArraySize(ev), 2);
    cJSON *e0 = cJSON_GetArrayItem(ev, 0);
    assert_string_equal(cJSON_GetObjectItem(e0, "name")->valuestring, "a \"quoted\"\\name\n\x01");
    assert_string_equal(cJSON_GetObjectItem(e0, "ph")->valuestring, "X");
    assert_int_equal((int)cJSON_GetObjectItem(e0, "pid")->valuedouble, 3);
    cJSON *args = cJSON_GetObjectItem(e0, "args");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(args, "nan")));
    assert_string_equal(cJSON_GetObjectItem(args, "s")->valuestring, "tab\there");
    assert_true(cJSON_GetObjectItem(args, "x")->valuedouble == 2.5);
    assert_int_equal((int)cJSON_GetObjectItem(doc, "tail")->valuedouble, 1);
    cJSON_Delete(doc);
}

/* Before close, the file is the header plus whole events: every line after
 * the first parses alone, and the reader loads all of them. */
static void test_batches_are_whole_events(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "batch.json");
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, "", err, sizeof(err)), 0);
    int n = 0;
    while (trace_writer_bytes(w) < 3 * TRACE_WRITER_BATCH) {
        trace_writer_begin(w, 'X', "forward", "forward", 0, 0, (int64_t)n * 1000);
        trace_writer_dur(w, 500);
        trace_writer_args_begin(w);
        trace_writer_arg_u64(w, "step", (uint64_t)n);
        trace_writer_args_end(w);
        trace_writer_end(w);
        n++;
    }
    size_t len;
    char *text = slurp(path, &len);
    assert_int_equal(len, trace_writer_bytes(w));
    assert_true(text[len - 1] == '}'); /* a batch ends after a whole event */
    int lines = 0;
    for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save), lines++) {
        if (lines == 0) {
            assert_non_null(strstr(ln, "\"traceEvents\":["));
            continue;
        }
        cJSON *e = cJSON_Parse(ln[0] == ',' ? ln + 1 : ln);
        assert_non_null(e);
        cJSON_Delete(e);
    }
    free(text);
    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, path, err, sizeof(err)), 0);
    assert_true(d.truncated);
    assert_false(d.complete);
    assert_int_equal(d.events, (uint64_t)(lines - 1));
    trace_doc_free(&d);
    assert_int_equal(trace_writer_close(w, "", err, sizeof(err)), 0);
    cJSON *doc = load_json(path);
    assert_int_equal(cJSON_GetArraySize(events_of(doc)), n);
    cJSON_Delete(doc);
}

static void test_disk_full(void **state)
{
    char err[1500];
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, "/dev/full", "", err, sizeof(err)), 0);
    const char *e = trace_writer_error(w);
    assert_non_null(e); /* the header is written at once, and fails */
    assert_non_null(strstr(e, "/dev/full"));
    assert_non_null(strstr(e, "incomplete"));
    for (int i = 0; i < 100000; i++) { /* later calls are harmless no-ops */
        trace_writer_begin(w, 'X', "forward", "forward", 0, 0, i);
        trace_writer_dur(w, 1);
        trace_writer_end(w);
    }
    assert_int_equal(trace_writer_events(w), 0);
    assert_int_equal(trace_writer_close(w, "", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/dev/full"));
    assert_non_null(strstr(err, "No space left"));
}

static void test_gzip(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "z.json.gz");
    struct trace_writer *w;
    assert_int_equal(trace_writer_open(&w, path, "\"ddptop\":{\"run\":{}},", err, sizeof(err)), 0);
    for (int i = 0; i < 5000; i++) {
        trace_writer_begin(w, 'X', "forward", "forward", 0, 0, (int64_t)i * 1000);
        trace_writer_dur(w, 10);
        trace_writer_args_begin(w);
        trace_writer_arg_u64(w, "step", 0);
        trace_writer_args_end(w);
        trace_writer_end(w);
    }
    assert_int_equal(trace_writer_flush(w), 0);
    /* flushed but not closed: a decodable prefix */
    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, path, err, sizeof(err)), 0);
    assert_int_equal(d.events, 5000);
    assert_false(d.complete);
    trace_doc_free(&d);
    assert_int_equal(trace_writer_close(w, ",\"ddptopTraceEnd\":{\"complete\":true}", err, sizeof(err)), 0);
    size_t n;
    char *raw = slurp(path, &n);
    assert_true((unsigned char)raw[0] == 0x1f && (unsigned char)raw[1] == 0x8b);
    free(raw);
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, path, err, sizeof(err)), 0);
    assert_int_equal(d.flavor, TRACE_DDPTOP);
    assert_true(d.complete);
    assert_int_equal(d.nranks, 1);
    assert_int_equal(d.ranks[0].nspans, 5000);
    assert_int_equal(d.ranks[0].spans[4999].t0_ns, 4999000);
    trace_doc_free(&d);
}

static void test_paths(void **state)
{
    char out[256];
    assert_int_equal(trace_export_path("t.json", 0, -1, out, sizeof(out)), 0);
    assert_string_equal(out, "t.json");
    assert_int_equal(trace_export_path("t.json", 1, -1, out, sizeof(out)), 0);
    assert_string_equal(out, "t.run1.json");
    assert_int_equal(trace_export_path("dir.v2/t.json.gz", 2, 0, out, sizeof(out)), 0);
    assert_string_equal(out, "dir.v2/t.run2.rank0.json.gz");
    assert_int_equal(trace_export_path("trace", 0, 3, out, sizeof(out)), 0);
    assert_string_equal(out, "trace.rank3.json"); /* a rank's file is JSON, as --help says */
    assert_int_equal(trace_export_path("a.b/tr3", 0, 0, out, sizeof(out)), 0);
    assert_string_equal(out, "a.b/tr3.rank0.json");
    assert_int_equal(trace_export_path("a.b/trace", 1, -1, out, sizeof(out)), 0);
    assert_string_equal(out, "a.b/trace.run1");
    assert_int_equal(trace_export_path("x.gz", 0, 1, out, sizeof(out)), 0);
    assert_string_equal(out, "x.rank1.gz");
    assert_int_equal(trace_export_path("t.json", 1, 1, out, 8), -1);
}

static struct span mk(int lane, int cat, int64_t t0, int64_t t1, uint32_t step)
{
    struct span s = {.t0_ns = t0, .t1_ns = t1, .step = step, .tag = -1, .lane = (uint8_t)lane, .cat = (uint8_t)cat};
    return s;
}

static struct span mkcoll(int lane, int64_t t0, int64_t t1, uint32_t step, uint32_t seq, int16_t tag)
{
    struct span s = mk(lane, CAT_COMM, t0, t1, step);
    s.seq = seq;
    s.tag = tag;
    s.outer = 1;
    s.coll = COLL_ALLREDUCE;
    s.bytes = s.bytes_rx = 1000;
    s.size = 2000;
    return s;
}

static double factor(int kind, int n)
{
    return 2.0 * (n - 1) / n;
}

static void open_export(struct trace_export **x, const char *path, int world)
{
    char err[512];
    struct trace_export_opts o = {.path = path,
                                  .world = world,
                                  .step_to = -1,
                                  .backend = "shm",
                                  .algo = "ring",
                                  .base_ns = 1000,
                                  .busbw_factor = factor,
                                  .meta_json = "{\"model\":\"t\"}"};
    assert_int_equal(trace_export_open(x, &o, err, sizeof(err)), 0);
}

/* Finds the first event with ph and name (and pid when >= 0). */
static cJSON *find(cJSON *events, const char *ph, const char *name, int pid)
{
    cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        if (!strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, ph) && cJSON_GetObjectItem(e, "name") &&
            !strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) &&
            (pid < 0 || (int)cJSON_GetObjectItem(e, "pid")->valuedouble == pid))
            return e;
    }
    return NULL;
}

static double arg(cJSON *e, const char *k)
{
    cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), k);
    assert_non_null(v);
    return v->valuedouble;
}

static void test_collectives_matched_by_seq(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "coll.json");
    struct trace_export *x;
    open_export(&x, path, 2);
    /* rank 0 waits 40 us for rank 1 inside seq 0; rank 1 arrives later */
    struct span a = mkcoll(LANE_MAIN, 10000, 110000, 0, 0, 0);
    struct span aw = mk(LANE_MAIN, CAT_WAIT, 20000, 60000, 0);
    aw.coll = COLL_ALLREDUCE;
    struct span b = mkcoll(LANE_MAIN, 50000, 110000, 0, 0, 0);
    trace_export_span(x, 0, &aw);
    trace_export_span(x, 0, &a);
    /* a send between the two halves of seq 0: written at once, matched
     * with nothing (point-to-point spans carry seq 0, COLL_NONE) */
    struct span p2p = mkcoll(LANE_MAIN, 112000, 115000, 0, 0, -1);
    p2p.coll = COLL_NONE;
    p2p.bytes_rx = 0;
    trace_export_span(x, 0, &p2p);
    trace_export_span(x, 1, &b);
    /* seq 1 only ever reaches rank 0: written at close, without transfer */
    struct span c = mkcoll(LANE_MAIN, 200000, 210000, 1, 1, 1);
    trace_export_span(x, 0, &c);
    struct trace_step_info st = {.step = 0, .t0_ns = 1000, .t1_ns = 120000, .loss = 2.5f, .n = 32};
    trace_export_step(x, 0, &st);
    trace_export_step(x, 1, &st);
    /* what is known only at the end joins the footer (set twice: the last) */
    assert_int_equal(trace_export_set_end(x, "\"clocks\":[]"), 0);
    assert_int_equal(trace_export_set_end(x, "\"clocks\":[{\"rank\":1,\"estimates\":3}]"), 0);
    assert_int_equal(trace_export_close(x, "stopped", 7, err, sizeof(err)), 0);

    cJSON *doc = load_json(path);
    cJSON *ev = events_of(doc);
    cJSON *di = cJSON_GetObjectItem(doc, "distributedInfo");
    assert_string_equal(cJSON_GetObjectItem(di, "backend")->valuestring, "shm");
    assert_int_equal((int)cJSON_GetObjectItem(di, "world_size")->valuedouble, 2);
    cJSON *c0 = NULL, *c1 = NULL, *cu = NULL, *e;
    cJSON_ArrayForEach(e, ev)
    {
        if (strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X") || !cJSON_GetObjectItem(e, "cat") ||
            strcmp(cJSON_GetObjectItem(e, "cat")->valuestring, "comm"))
            continue;
        int pid = (int)cJSON_GetObjectItem(e, "pid")->valuedouble;
        int seq = (int)arg(e, "seq");
        if (seq == 1)
            cu = e;
        else if (pid == 0)
            c0 = e;
        else
            c1 = e;
    }
    assert_non_null(c0);
    assert_non_null(c1);
    assert_non_null(cu);
    assert_true(arg(c0, "transfer_us") == 60.0);
    assert_true(arg(c0, "sync_us") == 40.0);
    assert_true(arg(c1, "transfer_us") == 60.0);
    assert_true(arg(c1, "sync_us") == 0.0);
    assert_true(arg(c0, "ranks") == 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(c0, "args"), "algorithm")->valuestring, "ring");
    assert_true(cJSON_GetObjectItem(c0, "ts")->valuedouble == 9.0); /* base_ns 1000 is ts 0 */
    assert_true(cJSON_GetObjectItem(c0, "dur")->valuedouble == 100.0);
    assert_true(arg(cu, "ranks_seen") == 1);
    cJSON *send = find(ev, "X", "send", 0);
    assert_non_null(send);
    assert_true(arg(send, "bytes") == 1000);
    assert_true(cJSON_GetObjectItem(send, "dur")->valuedouble == 3.0);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(cu, "args"), "transfer_us"));
    cJSON *step = find(ev, "X", "ProfilerStep#0", 0);
    assert_non_null(step);
    assert_string_equal(cJSON_GetObjectItem(step, "cat")->valuestring, "step");
    assert_true(arg(step, "loss") == 2.5);
    assert_non_null(find(ev, "C", "loss", 1));
    cJSON *bw = find(ev, "C", "busbw", 0);
    assert_non_null(bw); /* step 0's one collective: 2000 B x busbw factor 1.0 over 100 us */
    assert_true(fabs(arg(bw, "GB/s") - 2000.0 / 100000.0) < 1e-9);
    assert_non_null(find(ev, "M", "process_name", 1));
    cJSON *end = cJSON_GetObjectItem(doc, "ddptopTraceEnd");
    assert_string_equal(cJSON_GetObjectItem(end, "state")->valuestring, "stopped");
    cJSON *clocks = cJSON_GetObjectItem(end, "clocks");
    assert_int_equal(cJSON_GetArraySize(clocks), 1);
    assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(clocks, 0), "estimates")->valuedouble == 3);
    assert_int_equal((int)cJSON_GetObjectItem(end, "spans_dropped")->valuedouble, 7);
    assert_int_equal((int)cJSON_GetObjectItem(end, "collectives_unmatched")->valuedouble, 1);
    cJSON_Delete(doc);
}

/* Far more unfinished collectives than slots: memory stays bounded and
 * every span is still written once. */
static void test_collective_slots_bounded(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "slots.json");
    struct trace_export *x;
    open_export(&x, path, 2);
    int n = 3 * TRACE_EXPORT_SLOTS;
    for (int i = 0; i < n; i++) {
        struct span s = mkcoll(LANE_MAIN, i * 100, i * 100 + 50, 0, (uint32_t)i, -1);
        trace_export_span(x, 0, &s); /* rank 1 never comes */
    }
    /* names (2 ranks' process name and sort index, and thread name and sort
     * index of the one lane with events, rank 0's main) + evicted */
    assert_int_equal(trace_export_events(x), 6 + (uint64_t)(n - TRACE_EXPORT_SLOTS));
    assert_int_equal(trace_export_close(x, "failed", 0, err, sizeof(err)), 0);
    cJSON *doc = load_json(path);
    int comm = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, events_of(doc)) comm += !strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X");
    assert_int_equal(comm, n);
    cJSON_Delete(doc);
}

static void test_bucket_flows(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "flow.json");
    struct trace_export *x;
    open_export(&x, path, 1);
    struct span bwd = mk(LANE_MAIN, CAT_BACKWARD, 1000, 100000, 0);
    struct span ready = mk(LANE_MAIN, CAT_BACKWARD, 41000, 41000, 0);
    ready.tag = 3;
    struct span b3 = mkcoll(LANE_COMM, 51000, 61000, 0, 0, 3);
    struct span b4 = mkcoll(LANE_COMM, 71000, 81000, 0, 1, 4); /* no marker: flow starts at the allreduce */
    trace_export_span(x, 0, &ready);
    trace_export_span(x, 0, &b3);
    trace_export_span(x, 0, &b4);
    trace_export_span(x, 0, &bwd);
    assert_int_equal(trace_export_close(x, "done", 0, err, sizeof(err)), 0);
    cJSON *doc = load_json(path);
    cJSON *ev = events_of(doc);
    cJSON *i = find(ev, "i", "bucket ready", 0);
    assert_non_null(i);
    cJSON *s3 = find(ev, "s", "bucket 3", 0), *f3 = find(ev, "f", "bucket 3", 0);
    cJSON *s4 = find(ev, "s", "bucket 4", 0), *f4 = find(ev, "f", "bucket 4", 0);
    assert_non_null(s3);
    assert_non_null(f3);
    assert_non_null(s4);
    assert_non_null(f4);
    assert_true(cJSON_GetObjectItem(s3, "ts")->valuedouble == 40.0);
    assert_int_equal((int)cJSON_GetObjectItem(s3, "tid")->valuedouble, LANE_MAIN);
    assert_true(cJSON_GetObjectItem(f3, "ts")->valuedouble == 50.0);
    assert_int_equal((int)cJSON_GetObjectItem(f3, "tid")->valuedouble, LANE_COMM);
    assert_string_equal(cJSON_GetObjectItem(f3, "bp")->valuestring, "e");
    assert_true(cJSON_GetObjectItem(s3, "id")->valuedouble == cJSON_GetObjectItem(f3, "id")->valuedouble);
    assert_true(cJSON_GetObjectItem(s4, "ts")->valuedouble == 70.0);
    assert_true(cJSON_GetObjectItem(s4, "id")->valuedouble != cJSON_GetObjectItem(s3, "id")->valuedouble);
    cJSON_Delete(doc);
}

static void test_filters_and_split(void **state)
{
    char path[300], p1[300], err[512];
    tmp_path(path, sizeof(path), "filt.json");
    tmp_path(p1, sizeof(p1), "filt.rank1.json");
    struct trace_export *x;
    struct trace_export_opts o = {.path = path,
                                  .world = 3,
                                  .split = 1,
                                  .ranks_mask = 2,
                                  .step_from = 2,
                                  .step_to = 3,
                                  .backend = "shm",
                                  .algo = "ring"};
    assert_int_equal(trace_export_open(&x, &o, err, sizeof(err)), 0);
    for (int r = 0; r < 3; r++)
        for (uint32_t s = 0; s < 6; s++) {
            struct span sp = mk(LANE_MAIN, CAT_FORWARD, s * 100, s * 100 + 50, s);
            trace_export_span(x, r, &sp);
            struct trace_step_info st = {.step = s, .t0_ns = s * 100, .t1_ns = s * 100 + 90, .n = 1};
            trace_export_step(x, r, &st);
        }
    assert_int_equal(trace_export_close(x, "done", 0, err, sizeof(err)), 0);
    char p0[300];
    tmp_path(p0, sizeof(p0), "filt.rank0.json");
    assert_int_equal(access(p0, F_OK), -1); /* rank 0 not traced: no file */
    cJSON *doc = load_json(p1);
    assert_int_equal((int)cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "distributedInfo"), "rank")->valuedouble, 1);
    int nx = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, events_of(doc))
    {
        assert_int_equal((int)cJSON_GetObjectItem(e, "pid")->valuedouble, 1);
        if (!strcmp(cJSON_GetObjectItem(e, "ph")->valuestring, "X")) {
            int st = (int)arg(e, "step");
            assert_true(st >= 2 && st <= 3);
            nx++;
        }
    }
    assert_int_equal(nx, 4); /* a forward span and a step, for steps 2 and 3 */
    cJSON_Delete(doc);
}

/* A ddptop trace cut at every byte still loads, and never loses an event
 * that was whole before the cut. */
static void test_reader_survives_any_cut(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "cut.json");
    struct trace_export *x;
    open_export(&x, path, 2);
    for (uint32_t s = 0; s < 3; s++)
        for (int r = 0; r < 2; r++) {
            struct span f = mk(LANE_MAIN, CAT_FORWARD, s * 1000000 + 1000, s * 1000000 + 5000, s);
            struct span c = mkcoll(LANE_MAIN, s * 1000000 + 6000, s * 1000000 + 9000, s, s, 0);
            trace_export_span(x, r, &f);
            trace_export_span(x, r, &c);
            struct trace_step_info st = {.step = s, .t0_ns = s * 1000000, .t1_ns = s * 1000000 + 9500, .n = 4};
            trace_export_step(x, r, &st);
        }
    assert_int_equal(trace_export_close(x, "done", 0, err, sizeof(err)), 0);
    size_t n;
    char *text = slurp(path, &n);
    uint64_t prev = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        struct trace_doc d;
        trace_doc_init(&d);
        char *copy = malloc(cut + 1); /* exact size: ASan catches a read past the cut */
        memcpy(copy, text, cut);
        int rc = trace_read_buffer(&d, copy, cut, "cut", err, sizeof(err));
        if (cut == 0) {
            assert_int_equal(rc, -1);
        } else {
            assert_int_equal(rc, 0);
            assert_true(d.events >= prev);
            prev = d.events;
            if (cut < n - 1)
                assert_false(d.complete);
        }
        free(copy);
        trace_doc_free(&d);
    }
    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_buffer(&d, text, n, "whole", err, sizeof(err)), 0);
    assert_true(d.complete);
    assert_int_equal(d.nranks, 2);
    assert_int_equal(d.ranks[1].nsteps, 3);
    assert_int_equal(d.ranks[1].nspans, 6);
    assert_int_equal(d.ranks[1].coll_matched, 3);
    assert_int_equal(d.ranks[0].spans[1].t1_ns - d.ranks[0].spans[1].t0_ns, 3000);
    trace_doc_free(&d);
    free(text);
}

/* A GPU rank's device records overlap across streams: each stream role
 * gets its own named thread. Each record is written as Kineto writes one
 * (its name, cat kernel or gpu_memcpy, device and stream in args) with
 * the host phase it belongs to, and reads back as the gpu lane with that
 * phase as its category. */
static void test_gpu_streams(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "gpu.json");
    /* the names are lent for the open alone, as the tracer lends them */
    char *lent = strdup("cuda:3");
    const char *dev[1] = {lent};
    struct trace_export *x;
    struct trace_export_opts o = {.path = path, .world = 1, .step_to = -1, .backend = "nccl", .device = dev};
    assert_int_equal(trace_export_open(&x, &o, err, sizeof(err)), 0);
    memset(lent, 'x', 6);
    free(lent);
    struct span k = mk(LANE_GPU, CAT_BACKWARD, 1000, 9000, 0);
    struct span m = mk(LANE_GPU, CAT_DATA, 2000, 3000, 0);
    struct span c = mk(LANE_GPU, CAT_COMM, 5000, 12000, 0);
    k.name = probe_name_id("sgemm_128x64_nn");
    m.name = probe_name_id("Memcpy HtoD");
    m.bytes = 4096;
    c.name = probe_name_id("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    assert_true(k.name > 0 && m.name > 0 && c.name > 0 && k.name != m.name);
    assert_int_equal(probe_name_id("Memcpy HtoD"), m.name);
    trace_export_span(x, 0, &k);
    trace_export_span(x, 0, &m);
    trace_export_span(x, 0, &c);
    assert_int_equal(trace_export_close(x, "done", 0, err, sizeof(err)), 0);
    cJSON *doc = load_json(path);
    cJSON *ev = events_of(doc);
    int tids[3] = {-1, -1, -1}, named[8] = {0};
    cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        int tid = (int)cJSON_GetObjectItem(e, "tid")->valuedouble;
        if (!strcmp(ph, "M") && !strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "thread_name") && tid < 8)
            named[tid] = 1;
        if (strcmp(ph, "X"))
            continue;
        const char *cat = cJSON_GetObjectItem(e, "cat")->valuestring;
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        cJSON *args = cJSON_GetObjectItem(e, "args");
        int i = name[0] == 's' ? 0 : name[0] == 'M' ? 1 : 2;
        tids[i] = tid;
        static const char *const cats[3] = {"kernel", "gpu_memcpy", "kernel"};
        static const char *const phases[3] = {"backward", "data", "comm"};
        assert_string_equal(cat, cats[i]);
        assert_string_equal(cJSON_GetObjectItem(args, "phase")->valuestring, phases[i]);
        assert_int_equal((int)cJSON_GetObjectItem(args, "device")->valuedouble, 3);
        assert_int_equal((int)cJSON_GetObjectItem(args, "stream")->valuedouble, tid);
        if (i == 1)
            assert_int_equal((int)cJSON_GetObjectItem(args, "bytes")->valuedouble, 4096);
    }
    assert_int_equal(tids[0], LANE_GPU);
    assert_int_equal(tids[1], LANE_COUNT);
    assert_int_equal(tids[2], LANE_COUNT + 1);
    assert_true(named[LANE_GPU] && named[LANE_COUNT] && named[LANE_COUNT + 1]);
    assert_string_equal(cJSON_GetObjectItem(find(ev, "M", "process_name", 0), "args")->child->valuestring,
                        "rank 0 (cuda:3)");
    cJSON_Delete(doc);
    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, path, err, sizeof(err)), 0);
    assert_int_equal(d.ranks[0].nspans, 3);
    int seen = 0;
    for (size_t i = 0; i < 3; i++) {
        const struct span *s = &d.ranks[0].spans[i];
        assert_int_equal(s->lane, LANE_GPU);
        seen |= 1 << s->cat;
        if (s->cat == CAT_DATA)
            assert_int_equal(s->bytes, 4096);
    }
    assert_int_equal(seen, (1 << CAT_BACKWARD) | (1 << CAT_DATA) | (1 << CAT_COMM));
    assert_string_equal(d.ranks[0].device, "cuda:3");
    trace_doc_free(&d);
}

/* Every lane survives the round trip through the exporter and the reader:
 * the training thread (main), DDP's comm lane, the prefetch lane (data)
 * and the device records of each stream role (gpu), each span read back
 * on the lane, with the category, times, step, bucket and collective it
 * was written with. (The breakdown unions every lane, so a reader that
 * mixed two lanes up would leave it, and so every percentage, unchanged.)
 * Both ranks run the same two collectives, so each is matched: the
 * straggler (rank 1) has sync 0, and transfer + sync is the collective. */
static void test_lanes_round_trip(void **state)
{
    char path[300], err[512];
    tmp_path(path, sizeof(path), "lanes.json");
    struct trace_export *x;
    open_export(&x, path, 2);
    enum { N = 10 };
    struct span want[2][N];
    for (int r = 0; r < 2; r++) {
        int64_t late = r ? 3000 : 0; /* rank 1 enters each collective 3 us later */
        struct span *w = want[r];
        w[0] = mk(LANE_DATA, CAT_DATA, 1000, 4000, 0);
        w[1] = mk(LANE_MAIN, CAT_FORWARD, 5000, 20000, 0);
        w[2] = mk(LANE_MAIN, CAT_BACKWARD, 20000, 60000, 0);
        w[3] = mkcoll(LANE_COMM, 30000 + late, 40000, 0, 0, 1); /* a bucket during backward */
        w[4] = mkcoll(LANE_MAIN, 61000 + late, 70000, 0, 1, -1);
        w[5] = mk(LANE_MAIN, CAT_OPTIMIZER, 71000, 75000, 0);
        w[6] = mk(LANE_GPU, CAT_FORWARD, 6000, 19000, 0);
        w[7] = mk(LANE_GPU, CAT_DATA, 2000, 3000, 0);
        w[8] = mk(LANE_GPU, CAT_COMM, 31000, 39000, 0);
        w[9] = mk(LANE_DATA, CAT_DATA, 62000, 66000, 1); /* the next batch, prefetched */
        for (int i = 0; i < N; i++)
            trace_export_span(x, r, &w[i]);
        struct trace_step_info st = {.step = 0, .t0_ns = 1000, .t1_ns = 76000, .loss = 2.0f, .n = 8};
        trace_export_step(x, r, &st);
    }
    assert_int_equal(trace_export_close(x, "done", 0, err, sizeof(err)), 0);

    struct trace_doc d;
    trace_doc_init(&d);
    assert_int_equal(trace_read_file(&d, path, err, sizeof(err)), 0);
    assert_int_equal(d.nranks, 2);
    for (int r = 0; r < 2; r++) {
        const struct trace_rank *tr = &d.ranks[r];
        assert_int_equal(tr->rank, r);
        assert_int_equal(tr->nspans, N);
        int found[N] = {0};
        for (size_t k = 0; k < tr->nspans; k++) {
            const struct span *got = &tr->spans[k];
            int i = 0; /* written spans differ in start or category */
            while (i < N && (want[r][i].t0_ns - 1000 != got->t0_ns || want[r][i].cat != got->cat))
                i++;
            if (i == N)
                fail_msg("rank %d: a %s span at %lld ns that was never written", r, cat_name(got->cat),
                         (long long)got->t0_ns);
            const struct span *w = &want[r][i];
            if (got->lane != w->lane)
                fail_msg("rank %d: the %s span at %lld ns was written on lane %d, read back on lane %d", r,
                         cat_name(w->cat), (long long)got->t0_ns, w->lane, got->lane);
            assert_int_equal(got->t1_ns - got->t0_ns, w->t1_ns - w->t0_ns);
            assert_int_equal(got->step, w->step);
            assert_int_equal(got->tag, w->tag);
            assert_int_equal(got->outer, w->outer);
            if (w->outer) {
                assert_int_equal(got->seq, w->seq);
                assert_int_equal(got->coll, COLL_ALLREDUCE);
                assert_int_equal(got->bytes, w->bytes);
                assert_int_equal(got->size, w->size);
            }
            found[i]++;
        }
        for (int i = 0; i < N; i++)
            assert_int_equal(found[i], 1);
        assert_int_equal(tr->coll_matched, 2);
        assert_int_equal(tr->xfer_ns, 7000 + 6000); /* the straggler's durations */
        assert_int_equal(tr->sync_ns, r ? 0 : 3000 + 3000);
        assert_int_equal(tr->xfer_ns + tr->sync_ns,
                         (want[r][3].t1_ns - want[r][3].t0_ns) + (want[r][4].t1_ns - want[r][4].t0_ns));
    }
    trace_doc_free(&d);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "diskfull") != 0) {
            fprintf(stderr, "usage: %s [diskfull]\n", argv[0]);
            return 2;
        }
        if (access("/dev/full", W_OK) != 0) {
            printf("SKIP: /dev/full cannot be written here\n");
            return 77;
        }
        const struct CMUnitTest full[] = {cmocka_unit_test(test_disk_full)};
        return cmocka_run_group_tests(full, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_batches_are_whole_events),
        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_collectives_matched_by_seq),
        cmocka_unit_test(test_collective_slots_bounded),
        cmocka_unit_test(test_bucket_flows),
        cmocka_unit_test(test_filters_and_split),
        cmocka_unit_test(test_gpu_streams),
        cmocka_unit_test(test_lanes_round_trip),
        cmocka_unit_test(test_reader_survives_any_cut),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
