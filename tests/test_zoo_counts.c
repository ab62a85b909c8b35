/* test_zoo_counts.c - every zoo model's size against PyTorch: for each model
 * and input shape (1x28x28, 3x32x32, 10 classes) model_create's parameter
 * count must equal that of the same definition in PyTorch
 * (bench/torch_models.py), and at 3x224x224 with 1000 classes, where the
 * zoo builds ImageNet forms, that of torchvision's model of the same name
 * (torchvision 0.14); its convolution and linear multiply-adds per
 * image (half their FLOPs in the layer table) PyTorch's hooks' count, which
 * also checks every layer's output size. The PyTorch numbers are in
 * tests/fixtures/zoo/counts.txt, written by tests/gen_zoo_fixtures.py; a
 * missing file fails. The sizes --help prints (zoo_models[].params/flops)
 * must equal the built models', and the binary must print them: --help
 * lists every model with its sizes, and --info prints the layer table and
 * the totals (trainable ones under --trainable) without any data files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_cpu.h"
#include "model.h"
#include "zoo.h"

static void test_counts_match_pytorch(void **state)
{
    char path[1024], line[256];
    snprintf(path, sizeof(path), "%s/fixtures/zoo/counts.txt", DDPTOP_TEST_DIR);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("missing %s (regenerate with /usr/bin/python3 tests/gen_zoo_fixtures.py)", path);
    int seen[64][ZOO_SHAPES] = {{0}}, rows = 0;
    while (fgets(line, sizeof(line), f)) {
        char name[64];
        int c, side;
        long long params, macs;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%63s %d %d %lld %lld", name, &c, &side, &params, &macs) != 5)
            fail_msg("malformed line in %s: %s", path, line);
        const struct zoo_entry *z = zoo_find(name);
        if (!z)
            fail_msg("counts.txt names %s, which the zoo does not have", name);
        char err[256];
        int s = side == 28 ? ZOO_28 : side == 32 ? ZOO_32 : ZOO_224;
        struct model *m =
            zoo_create(NULL, name, 1, c, side, side, s == ZOO_224 ? ZOO_IMAGENET_CLASSES : 10, 1, err, sizeof(err));
        if (!m)
            fail_msg("%s: %s", name, err);
        long long mm = 0;
        for (int l = 0; l < m->nlayers; l++)
            if (!strcmp(m->layers[l].ops->kind, "conv2d") || !strcmp(m->layers[l].ops->kind, "linear"))
                mm += m->layers[l].flops / 2;
        print_message("  %-14s %dx%dx%d  params %10zu (PyTorch %10lld)  MACs %11lld (PyTorch %11lld)\n", name, c, side,
                      side, m->nfloats, params, mm, macs);
        assert_int_equal((long long)m->nfloats, params);
        assert_int_equal(mm, macs);
        /* the sizes --help shows */
        assert_int_equal(z->params[s], (long long)m->nfloats);
        assert_int_equal(z->flops[s], model_flops(m));
        seen[z - zoo_models][s] = 1;
        rows++;
        model_destroy(m);
    }
    fclose(f);
    static const char *const shape[ZOO_SHAPES] = {"1x28x28", "3x32x32", "3x224x224"};
    for (int i = 0; i < zoo_count; i++)
        for (int s = 0; s < ZOO_SHAPES; s++)
            if (!seen[i][s])
                fail_msg("counts.txt lacks %s at %s", zoo_models[i].name, shape[s]);
    assert_int_equal(rows, ZOO_SHAPES * zoo_count);
}

/* The two counts the issue states for CIFAR-10 input. */
static void test_cifar_counts(void **state)
{
    const struct zoo_entry *r = zoo_find("resnet18"), *v = zoo_find("vgg11");
    assert_non_null(r);
    assert_non_null(v);
    assert_int_equal(r->params[ZOO_32], 11173962);
    assert_int_equal(v->params[ZOO_32], 9231114);
}

/* Runs the ddptop binary with args; returns its stdout (caller frees). */
static char *run_bin(const char *args)
{
    const char *bin = getenv("DDPTOP_BIN");
    if (!bin)
        bin = DDPTOP_BIN;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t k;
    while ((k = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    return out;
}

static void test_cli_help_and_info(void **state)
{
    char *help = run_bin("--help");
    for (int i = 0; i < zoo_count; i++) {
        char want[128];
        snprintf(want, sizeof(want), "\n  %-13s ", zoo_models[i].name);
        if (!strstr(help, want))
            fail_msg("--help does not list %s", zoo_models[i].name);
    }
    assert_non_null(strstr(help, "3x32x32: 11.17M, 1.113 GFLOP")); /* resnet18's sizes line */
    free(help);
    /* --dataset cifar10 only sets the input shape: no files are read */
    char *info = run_bin("--model resnet18 --info --dataset cifar10 --data-dir /nonexistent");
    assert_non_null(strstr(info, "resnet18 on 3x32x32"));
    assert_non_null(strstr(info, "layer4.1.conv2"));
    assert_non_null(strstr(info, "total parameters: 11173962 (trainable 11173962)"));
    free(info);
    info = run_bin("--model vgg11 --info --trainable classifier");
    assert_non_null(strstr(info, "total parameters: 9229962 (trainable 5130)"));
    assert_non_null(strstr(info, "(frozen)"));
    free(info);
}

/* What a GPU's layers can do with 16-bit channels-last tensors, told here
 * by kind and shape as layers_cuda.c tells it: convolutions without groups
 * whose channels come in 8s read them, and write them without a bias;
 * batch norm, ReLU, add and max-pool write them (casting an fp32 input)
 * and read them when they do; adaptive and global average pools read
 * them; nothing else does either. */
static int fake_cap(const struct model *m, const struct layer *l)
{
    const char *k = l->ops->kind;
    if (!strcmp(k, "conv2d")) {
        const struct tensor *in = &m->tensors[l->in], *out = &m->tensors[l->out];
        int grouped = m->params[l->param0].shape[1] != in->c;
        if (grouped || in->c % 8 || out->c % 8)
            return 0;
        return l->nparam == 1 ? CHAIN16_IN | CHAIN16_OUT : CHAIN16_IN;
    }
    if (!strcmp(k, "batchnorm") || !strcmp(k, "relu") || !strcmp(k, "add") || !strcmp(k, "maxpool"))
        return CHAIN16_OUT | CHAIN16_PASS;
    if (!strcmp(k, "adaptpool") || !strcmp(k, "globalpool"))
        return CHAIN16_IN;
    return 0;
}

static struct model *planned(const char *name, int c, int side, int *n)
{
    char err[256];
    struct model *m = zoo_create(NULL, name, 2, c, side, side, 10, 1, err, sizeof(err));
    if (!m)
        fail_msg("%s: %s", name, err);
    for (int t = 0; t < m->ntensors; t++)
        m->tensors[t].blk = 1; /* as a GPU lays them out (the CPU blocks channels) */
    *n = model_plan_chain16(m, fake_cap);
    int count = 0;
    for (int t = 0; t < m->ntensors; t++)
        count += m->tensors[t].h16;
    assert_int_equal(*n, count);
    return m;
}

static int h16_of(const struct model *m, int t)
{
    return t >= 0 && m->tensors[t].h16;
}

/* model_plan_chain16: which tensors stay 16-bit between layers. ResNet-18
 * from its first batch norm to its pool's input; never the model's input,
 * output, a stem convolution's output (3 channels in), a tensor that a
 * flatten, a linear layer, a concatenation or a grouped convolution reads. */
static void test_chain16_plan(void **state)
{
    int n;
    struct model *m = planned("resnet18", 3, 32, &n);
    int pools = 0, adds = 0, bns = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const struct layer *l = &m->layers[i];
        const char *k = l->ops->kind;
        if (!strcmp(k, "batchnorm")) {
            bns++;
            assert_true(h16_of(m, l->out));
        }
        if (!strcmp(k, "add")) {
            adds++;
            assert_true(h16_of(m, l->out) && h16_of(m, l->in) && h16_of(m, l->in2));
        }
        if (!strcmp(k, "globalpool") || !strcmp(k, "adaptpool")) {
            pools++;
            assert_true(h16_of(m, l->in));
            assert_false(h16_of(m, l->out));
        }
        if (!strcmp(k, "linear") || !strcmp(k, "flatten"))
            assert_false(h16_of(m, l->in));
    }
    assert_int_equal(pools, 1);
    assert_int_equal(adds, 8);
    assert_int_equal(bns, 20);
    assert_false(h16_of(m, m->input));
    assert_false(h16_of(m, m->output));
    assert_false(h16_of(m, m->layers[0].out)); /* conv1: 3 channels in */
    printf("  resnet18: %d of %d tensors 16-bit\n", n, m->ntensors);
    model_destroy(m);

    const char *others[] = {"densenet121", "mobilenetv2", "squeezenet1_0", "vgg11", "mlp"};
    for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
        m = planned(others[k], 3, 32, &n);
        for (int i = 0; i < m->nlayers; i++) {
            const struct layer *l = &m->layers[i];
            int c = fake_cap(m, l);
            /* a reader takes 16 bits only where it can, as it will run */
            if (!(c & CHAIN16_IN) && !((c & CHAIN16_PASS) && h16_of(m, l->out)))
                assert_false(h16_of(m, l->in) || h16_of(m, l->in2));
            if (!(c & CHAIN16_OUT))
                assert_false(h16_of(m, l->out));
        }
        for (int t = 0; t < m->ntensors; t++)
            if (m->tensors[t].alias_of >= 0)
                assert_false(h16_of(m, t) || h16_of(m, m->tensors[t].alias_of));
        printf("  %s: %d of %d tensors 16-bit\n", others[k], n, m->ntensors);
        model_destroy(m);
    }
}

/* model_hold16: each 16-bit tensor of ResNet-18's plan gets v16 (and g16
 * where it had a gradient) and loses val and grad, the device's count
 * falling by exactly their difference; the activation bytes say so (from
 * the plan on);
 * gradients still flow through it when the model is frozen and thawed
 * again (need_grad survives the fp32 gradient's going); and destroying
 * the model gives every byte back. */
static void test_chain16_hold(void **state)
{
    struct device_mem mem = {0};
    struct device cpu = {.ops = &device_cpu, .mem = &mem};
    assert_int_equal(cpu.ops->open(&cpu, 0), 0);
    char err[256];
    const int B = 3;
    struct model *m = zoo_create(&cpu, "resnet18", B, 3, 32, 32, 10, 1, err, sizeof(err));
    if (!m)
        fail_msg("resnet18: %s", err);
    for (int t = 0; t < m->ntensors; t++)
        m->tensors[t].blk = 1;
    size_t act = model_activation_bytes(m), act_drop = 0; /* (the plan's h16 alone changes it) */
    int n = model_plan_chain16(m, fake_cap);
    assert_true(n > m->ntensors / 2);
    int64_t before = atomic_load(&mem.now), drop = 0;
    int had_grad[256], needed[256];
    assert_true(m->ntensors <= 256);
    for (int t = 0; t < m->ntensors; t++) {
        const struct tensor *x = &m->tensors[t];
        had_grad[t] = x->grad != NULL;
        needed[t] = x->need_grad;
        if (!x->h16)
            continue;
        int64_t k = 1 + had_grad[t];
        drop += k * ((int64_t)cpu_alloc_size(sizeof(float) * (size_t)x->stride * B) -
                     (int64_t)cpu_alloc_size(sizeof(uint16_t) * (size_t)(x->per_sample * B + (x->per_sample * B) % 2)));
        act_drop += (size_t)k * ((size_t)x->stride * sizeof(float) - (size_t)x->per_sample * sizeof(uint16_t));
    }
    assert_int_equal(model_hold16(m), 0);
    assert_int_equal(model_hold16(m), 0); /* (a second call has nothing left to do) */
    int held = 0;
    for (int t = 0; t < m->ntensors; t++) {
        const struct tensor *x = &m->tensors[t];
        if (!x->h16) {
            assert_non_null(x->val);
            assert_null(x->v16);
            assert_null(x->g16);
            continue;
        }
        held++;
        assert_null(x->val);
        assert_null(x->grad);
        assert_non_null(x->v16);
        assert_int_equal(x->g16 != NULL, had_grad[t]);
        assert_int_equal(tensor_has_grad(x), had_grad[t]);
    }
    assert_int_equal(held, n);
    assert_true(drop > 0);
    assert_int_equal(before - atomic_load(&mem.now), drop);
    assert_int_equal(act - model_activation_bytes(m), act_drop);
    /* freeze all but the classifier, then thaw: every tensor needs its
     * gradient again as before, 16-bit ones included */
    assert_int_equal(model_set_trainable(m, "classifier", err, sizeof(err)), 0);
    int needing = 0;
    for (int t = 0; t < m->ntensors; t++)
        needing += m->tensors[t].h16 && m->tensors[t].need_grad;
    assert_int_equal(needing, 0);
    assert_int_equal(model_set_trainable(m, "all", err, sizeof(err)), 0);
    for (int t = 0; t < m->ntensors; t++) {
        assert_int_equal(m->tensors[t].need_grad, needed[t]);
        needing += m->tensors[t].h16 && m->tensors[t].need_grad;
    }
    assert_true(needing > n / 2);
    printf("  resnet18 at batch %d: %d tensors 16-bit, %lld bytes fewer (%.0f%% of %lld)\n", B, held, (long long)drop,
           100.0 * (double)drop / (double)before, (long long)before);
    model_destroy(m);
    assert_int_equal(atomic_load(&mem.now), 0);
    cpu.ops->close(&cpu);
    free(mem.blocks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_match_pytorch), cmocka_unit_test(test_cifar_counts),
        cmocka_unit_test(test_cli_help_and_info),    cmocka_unit_test(test_chain16_plan),
        cmocka_unit_test(test_chain16_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
