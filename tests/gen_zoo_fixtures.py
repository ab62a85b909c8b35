#!/usr/bin/python3
"""gen_zoo_fixtures.py - one PyTorch training step of every zoo model, as
small text fixtures that tests/test_zoo_fixtures.c checks ddptop against, and
the parameter counts that tests/test_zoo_counts.c checks.

Run with Debian's python3 (torch 1.13 from python3-torch; the counts at
3x224x224 are torchvision 0.14's models, from python3-torchvision), from
anywhere:
    /usr/bin/python3 tests/gen_zoo_fixtures.py [--counts-only | --bf16-only] [OUTDIR]
(default OUTDIR: tests/fixtures/zoo)
Running the tests needs no Python.

The models are bench/torch_models.py's, which follow models/zoo.c layer for
layer with ddptop's parameter names and order. Nothing big is stored: both
sides derive the parameters and the batch from a counter hash,

    u(seed, k, i) = (mix(key + (i + 1) * GOLDEN) >> 40) / 2^24,
    key = mix(seed + (k + 1) * 0xD1B54A32D192ED03),

(mix: splitmix64's finalizer), exact in float32, for tensor k's element i:
  - a weight (He-uniform, so that the 20-layer nets without batch norm
    still carry a signal): (2u - 1) sqrt(6 / fan_in)
  - a convolution's or linear layer's bias: (2u - 1) / sqrt(fan_in) (its
    weight's fan_in)
  - a batch-norm weight: 1 + 0.1 (2u - 1); its bias: 0.1 (2u - 1)
  - the input batch (NCHW order, k = 0, INPUT_SEED): 2u - 1
each computed in double and rounded once to float. Dropout uses ddptop's
mask (models/kernels_ref.h, dropout_keep) with the model seed DROPOUT_SEED,
through HashDropout below, so the step with dropout is comparable too.

The reference numbers come from the step in float64, the exact answer the
float32 code approximates. How far float32 may land from it depends on the
model, and the fixture measures it two ways: the same step in float32, and
the float64 step on inputs perturbed by a float32-sized relative 2e-6 (three
random directions). Deep nets with batch norm over a batch of 2 amplify
rounding (ResNet-50's early gradients: ~2% in float32), and a ReLU input
that lies within rounding of 0 (among ~1M activations some lie within
1e-6 sigma) switches sides between implementations, moving its layer's
gradient by ~1/(values per channel): up to 1% on a 8x8 map of a batch of 2.
The test scales its gradient tolerances by the larger of the two.

Per model and input shape the file holds the loss, the logits, per
parameter tensor its name, length, parameter sum (a check of the generator
on both sides), gradient L2 norm and gradient projection sum(g_i r_i) with
r_i = 2u(PROJ_SEED, k, i) - 1 (a norm cannot see a permuted or misplaced
gradient; the projection can), |g32 - g64|, the L2 distance of PyTorch's
float32 gradient from float64's, and the largest L2 distance of a perturbed
step's gradient from float64's; each batch norm's running mean
and variance norms after the step; and the logits of an eval-mode forward
after it.

Format (whitespace separated, fscanf-friendly; '#' lines only at the top):
    model NAME / input C H W / batch B / classes K / labels B INTS
    seeds PARAM INPUT PROJ DROPOUT / loss X / logits N VALUES
    tensors T, then T lines: NAME LEN PARAM_SUM GRAD_NORM GRAD_PROJ DEV32 DEVPERT
    bnstats S, then S lines: LAYER MEAN_NORM VAR_NORM
    eval_logits N VALUES

--precision bf16 (BF16_MODELS, files NAME_CxS_bf16.txt): the same float64
reference, and the same step in float32 under PyTorch's CPU autocast to
bfloat16 (convolutions and linear layers take bf16 operands, and autocast
keeps their outputs in bf16) stands where float32 did: DEV32 is that
step's gradient distance from float64, and a last line

    bf16 LOSS_DEV LOGIT_DEV EVAL_DEV BN_RDEV

gives its loss's, its largest logit's and eval logit's distances from
float64 and its running statistics' largest relative one: ddptop's bf16
step (fp32 activations between layers) is held to a few times those.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import torch_models as tm  # noqa: E402

BATCH, CLASSES = 2, 10
LABELS = [3, 7]
PARAM_SEED, INPUT_SEED, PROJ_SEED, DROPOUT_SEED = 20240601, 777, 4242, 1
PERTURB, PERTURB_SEEDS = 2e-6, (11, 12, 13)
BF16_MODELS = [("lenet", 1, 28), ("resnet18", 3, 32)]
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix_int(z):
    z &= MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def mix_np(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def hash24(key, n):
    """(mix(key + (i+1)*GOLDEN) >> 40) / 2^24 for i < n, as float64."""
    with np.errstate(over="ignore"):
        i = np.arange(1, n + 1, dtype=np.uint64)
        z = mix_np(np.uint64(key) + i * np.uint64(GOLDEN))
    return (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)


def tensor_uniform(seed, k, n):
    return hash24(mix_int(seed + (k + 1) * 0xD1B54A32D192ED03), n)


def dropout_key(seed, ordinal, call):
    """models/kernels_ref.c dropout_key."""
    return mix_int(seed ^ ((ordinal + 1) << 48) ^ ((call * 0xD1B54A32D192ED03) & MASK))


class HashDropout(nn.Module):
    """nn.Dropout with ddptop's mask: element i (logical NCHW index) of
    training forward number `call` is kept when u >= p."""

    def __init__(self, p, ordinal, seed):
        super().__init__()
        self.p, self.ordinal, self.seed, self.calls = p, ordinal, seed, 0

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        key = dropout_key(self.seed, self.ordinal, self.calls)
        self.calls += 1
        u = hash24(key, x.numel()).astype(np.float32)
        p32 = np.float32(self.p)
        scale = np.float32(1.0) / (np.float32(1.0) - p32)
        m = np.where(u >= p32, scale, np.float32(0.0)).astype(np.float32)
        return x * torch.from_numpy(m).view_as(x)


def swap_dropout(model):
    """Replaces every nn.Dropout, in registration order (= ddptop's layer
    order), by HashDropout with the next ordinal."""
    ordinal = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Dropout):
                setattr(parent, name, HashDropout(child.p, ordinal, DROPOUT_SEED))
                ordinal += 1


def fill_params(model):
    """Sets every parameter from the hash; returns [(name, len, sum)]."""
    kinds = {}
    for mname, mod in model.named_modules():
        for pname, _ in mod.named_parameters(recurse=False):
            kinds[f"{mname}.{pname}" if mname else pname] = (mod, pname)
    info = []
    with torch.no_grad():
        for k, (name, p) in enumerate(model.named_parameters()):
            mod, pname = kinds[name]
            u2 = 2.0 * tensor_uniform(PARAM_SEED, k, p.numel()) - 1.0
            if isinstance(mod, nn.BatchNorm2d):
                v = 1.0 + 0.1 * u2 if pname == "weight" else 0.1 * u2
            else:
                fan_in = float(mod.weight[0].numel())
                v = u2 * (np.sqrt(6.0 / fan_in) if pname == "weight" else 1.0 / np.sqrt(fan_in))
            v = v.astype(np.float32)
            p.copy_(torch.from_numpy(v).view_as(p))
            info.append((name, p.numel(), float(v.astype(np.float64).sum())))
    return info


def step(name, c, side, dtype, perturb_seed=None, bf16=False):
    """One training forward + backward, then an eval forward; returns the
    model, parameter info, loss, logits, gradients and eval logits. With
    perturb_seed, the input is scaled by 1 + PERTURB (2u - 1) first; with
    bf16, both forwards run under CPU autocast to bfloat16."""
    torch.manual_seed(0)  # construction only: fill_params overwrites everything
    model = tm.build(name, c, side, CLASSES)
    swap_dropout(model)
    info = fill_params(model)
    model = model.to(dtype)
    x = torch.from_numpy((2.0 * tensor_uniform(INPUT_SEED, 0, BATCH * c * side * side) - 1.0).astype(np.float32))
    x = x.view(BATCH, c, side, side).to(dtype)
    if perturb_seed is not None:
        u = torch.from_numpy(2.0 * tensor_uniform(perturb_seed, 0, x.numel()) - 1.0).view_as(x)
        x = x * (1.0 + PERTURB * u)
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(x)
        loss = F.cross_entropy(logits, torch.tensor(LABELS))
    loss.backward()
    grads = [p.grad.detach().double().reshape(-1).numpy() for p in model.parameters()]
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        eval_logits = model(x)
    return model, info, loss, logits.detach().double(), grads, eval_logits.double()


def bn_norms(model):
    return [(mname, float(mod.running_mean.norm()), float(mod.running_var.norm()))
            for mname, mod in model.named_modules() if isinstance(mod, nn.BatchNorm2d)]


def generate(name, c, side, outdir, bf16=False):
    model, info, loss, logits, grads, eval_logits = step(name, c, side, torch.float64)
    low = step(name, c, side, torch.float32, bf16=bf16)
    grads32 = low[4]
    pert = [step(name, c, side, torch.float64, ps)[4] for ps in PERTURB_SEEDS]
    rows = []
    for k, ((pname, n, psum), g, g32) in enumerate(zip(info, grads, grads32)):
        r = 2.0 * tensor_uniform(PROJ_SEED, k, n) - 1.0
        devp = max(float(np.sqrt(((gp[k] - g) ** 2).sum())) for gp in pert)
        rows.append((pname, n, psum, float(np.sqrt((g * g).sum())), float((g * r).sum()),
                     float(np.sqrt(((g32 - g) ** 2).sum())), devp))
    bn = bn_norms(model)

    path = os.path.join(outdir, f"{name}_{c}x{side}{'_bf16' if bf16 else ''}.txt")
    with open(path, "w") as f:
        f.write(f"# {name} on {c}x{side}x{side}: one PyTorch {torch.__version__} training step, written by "
                "tests/gen_zoo_fixtures.py.\n# Do not edit; rerun the script. Format: see its docstring.\n")
        if bf16:
            f.write("# bf16: DEV32 is PyTorch's autocast-bf16 gradient's distance from float64.\n")
        f.write(f"model {name}\ninput {c} {side} {side}\nbatch {BATCH}\nclasses {CLASSES}\n")
        f.write("labels %d %s\n" % (BATCH, " ".join(map(str, LABELS))))
        f.write(f"seeds {PARAM_SEED} {INPUT_SEED} {PROJ_SEED} {DROPOUT_SEED}\n")
        f.write("loss %.9g\n" % loss.item())
        f.write("logits %d %s\n" % (logits.numel(), " ".join("%.9g" % v for v in logits.reshape(-1))))
        f.write(f"tensors {len(rows)}\n")
        for r in rows:
            f.write("%s %d %.17g %.17g %.17g %.3g %.3g\n" % r)
        f.write(f"bnstats {len(bn)}\n")
        for r in bn:
            f.write("%s %.17g %.17g\n" % r)
        f.write("eval_logits %d %s\n" % (eval_logits.numel(), " ".join("%.9g" % v for v in eval_logits.reshape(-1))))
        if bf16:
            bn_low = bn_norms(low[0])
            bn_rdev = max([abs(a[k] - b[k]) / b[k] for a, b in zip(bn_low, bn) for k in (1, 2) if b[k] > 0] + [0.0])
            f.write("bf16 %.3g %.3g %.3g %.3g\n" % (abs(low[2].item() - loss.item()),
                                                   float((low[3] - logits).abs().max()),
                                                   float((low[5] - eval_logits).abs().max()), bn_rdev))
    big = [r for r in rows if r[3] > 1e-6 * max(q[3] for q in rows)]
    print(f"{path}: {os.path.getsize(path)} bytes, loss {loss.item():.6f}, gradients move by "
          f"{max(r[5] / r[3] for r in big):.1e} in {'bf16' if bf16 else 'float32'}, "
          f"{max(r[6] / r[3] for r in big):.1e} perturbed")


def main():
    # --counts-only: counts.txt alone; --bf16-only: the bf16 steps alone
    args = [a for a in sys.argv[1:] if a not in ("--counts-only", "--bf16-only")]
    outdir = args[0] if args else os.path.join(HERE, "fixtures", "zoo")
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    if "--bf16-only" in sys.argv:
        for name, c, side in BF16_MODELS:
            generate(name, c, side, outdir, bf16=True)
        return
    with open(os.path.join(outdir, "counts.txt"), "w") as f:
        f.write("# Parameters and conv/linear multiply-accumulates per image of bench/torch_models.py's\n"
                "# models with 10 classes, and at 3x224x224 of torchvision's ImageNet forms with 1000\n"
                "# classes, written by tests/gen_zoo_fixtures.py. Columns:\n"
                "# model channels side params macs\n")
        for name in tm.MODELS:
            for c, side in tm.SHAPES + [(3, tm.IMAGENET_SIDE)]:
                k = tm.IMAGENET_CLASSES if side >= tm.IMAGENET_SIDE else CLASSES
                m = tm.build(name, c, side, k)
                f.write(f"{name} {c} {side} {tm.count_params(m)} {tm.count_macs(m, c, side)}\n")
    if "--counts-only" in sys.argv:
        return
    for name in tm.MODELS:
        for c, side in tm.SHAPES:
            generate(name, c, side, outdir)
    for name, c, side in BF16_MODELS:
        generate(name, c, side, outdir, bf16=True)


if __name__ == "__main__":
    main()
