#!/usr/bin/python3
"""gen_fixtures.py - dump one PyTorch training step of LeNet and the MLP as
text fixtures that tests/test_fixtures.c checks ddptop's models against.

Run with Debian's python3 (torch 1.13 from python3-torch), from anywhere:
    /usr/bin/python3 tests/gen_fixtures.py [OUTDIR]     (default tests/fixtures)

The models mirror models/zoo.c layer for layer and are named as ddptop names
its parameters, so named_parameters() order is ddptop's flat order (each
layer's weight, then its bias; PyTorch's [out,in] and [oc,ic,kh,kw] layouts
are ddptop's).

Parameters are not stored: both sides derive them from a counter-based hash
(splitmix64 of the flat index), uniform in [-bound, bound] per tensor with
bound = 1/sqrt(fan_in) as in PyTorch's default init. The arithmetic is exact
up to one double->float rounding, so both sides get bit-identical floats; the
file records each tensor's bound and parameter sum so that a generator
mismatch is reported as such. This keeps the MLP's 670k parameters out of
the repository.

Per model the file holds: the batch (inputs from torch.randn, labels), the
loss, the logits, gradients of the mean cross-entropy (all of them for
LeNet, a deterministic sample for the MLP), per-tensor gradient norms, then
two SGD steps (lr 0.01, momentum 0.9, weight decay 5e-4) on the same batch:
the loss before the second step and a sample of the parameters after each
step. Two steps, because the first never reads the momentum buffer.

Format (whitespace separated, read with fscanf; '#' lines only at the top):
    model NAME / batch B / classes K / lr X / momentum X / weight_decay X /
    param_seed S
    tensors T, then T lines: NAME LEN BOUND PARAM_SUM GRAD_NORM
    input dense N VALUES... / labels dense B INTS...
    loss dense 1 X / logits dense B*K VALUES...
    grads dense N VALUES...        or   grads sparse N (INDEX VALUE)...
    loss2 dense 1 X
    params_step1 sparse N (INDEX VALUE)... / params_step2 sparse N (INDEX VALUE)...
Indices are flat offsets into ddptop's param_buf. Floats are printed with
%.9g (exact float round trip); bounds and sums with %.17g.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, CLASSES = 8, 10
LR, MOMENTUM, WD = 0.01, 0.9, 5e-4
PARAM_SEED = 20240601
DATA_SEED = 1234
SAMPLE_SEED = 99
GRAD_SAMPLE = 128   # per tensor, for models whose gradients are sampled
STEP_SAMPLE = 64    # per tensor, parameters after each SGD step

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


class LeNet(nn.Module):
    """models/zoo.c build_lenet, as bench/torch_models.py's LeNet."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class MLP(nn.Module):
    """models/zoo.c build_mlp: 784-512-512-10, ReLU."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, CLASSES)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


# name -> (module class, whether every gradient is stored)
MODELS = {"lenet": (LeNet, True), "mlp": (MLP, False)}


def hash_uniform(first, n, seed):
    """u[i] = top 24 bits of splitmix64(seed + (first+i+1)*GOLDEN) / 2^24,
    exactly as hash_uniform() in test_fixtures.c."""
    with np.errstate(over="ignore"):
        i = np.arange(first + 1, first + n + 1, dtype=np.uint64)
        z = np.uint64(seed) + i * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)


def fan_in_bound(params, k):
    """1/sqrt(fan_in), a bias taking its weight's fan_in (the previous tensor)."""
    w = params[k - 1][1] if params[k][1].dim() == 1 and k > 0 else params[k][1]
    fan_in = w[0].numel() if w.dim() >= 2 else 1
    return 1.0 / np.sqrt(float(fan_in))


def fill_params(model):
    """Sets every parameter from the hash; returns [(name, len, bound, sum)]."""
    params = list(model.named_parameters())
    info, off = [], 0
    with torch.no_grad():
        for k, (name, p) in enumerate(params):
            bound = fan_in_bound(params, k)
            v = ((2.0 * hash_uniform(off, p.numel(), PARAM_SEED) - 1.0) * bound).astype(np.float32)
            p.copy_(torch.from_numpy(v).view_as(p))
            info.append((name, p.numel(), bound, float(v.astype(np.float64).sum())))
            off += p.numel()
    return info


def sample_indices(model, per_tensor, gen, grads=None):
    """Sorted flat indices: per tensor a random sample, plus its largest
    |gradient| when grads are given (so a lost gradient cannot hide)."""
    out, off = [], 0
    for _, p in model.named_parameters():
        n = p.numel()
        pick = torch.randperm(n, generator=gen)[:min(n, per_tensor)].tolist()
        if grads is not None:
            pick.append(int(grads[off:off + n].abs().argmax()))
        out += sorted({off + i for i in pick})
        off += n
    return out


def flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors]).detach().clone()


def dense(f, key, values, fmt="%.9g", per_line=8):
    values = list(values)
    f.write(f"{key} dense {len(values)}\n")
    for i in range(0, len(values), per_line):
        f.write(" ".join(fmt % v for v in values[i:i + per_line]) + "\n")


def sparse(f, key, idx, values):
    f.write(f"{key} sparse {len(idx)}\n")
    for i in idx:
        f.write("%d %.9g\n" % (i, values[i]))


def generate(name, outdir):
    cls, all_grads = MODELS[name]
    torch.manual_seed(0)  # construction only: fill_params overwrites everything
    model = cls()
    info = fill_params(model)

    g = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(BATCH, 1, 28, 28, generator=g)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)

    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    params = list(model.parameters())
    grads = flat(p.grad for p in params)
    norms = [float(p.grad.double().norm()) for p in params]
    opt.step()
    step1 = flat(params)

    loss2 = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss2.backward()
    opt.step()
    step2 = flat(params)

    sg = torch.Generator().manual_seed(SAMPLE_SEED)
    grad_idx = None if all_grads else sample_indices(model, GRAD_SAMPLE, sg, grads)
    step_idx = sample_indices(model, STEP_SAMPLE, sg)

    path = os.path.join(outdir, f"{name}_step.txt")
    with open(path, "w") as f:
        f.write(f"# {name}: one PyTorch {torch.__version__} training step, written by tests/gen_fixtures.py.\n")
        f.write("# Do not edit; rerun the script. Format: see its docstring.\n")
        f.write(f"model {name}\nbatch {BATCH}\nclasses {CLASSES}\n")
        f.write(f"lr {LR!r}\nmomentum {MOMENTUM!r}\nweight_decay {WD!r}\nparam_seed {PARAM_SEED}\n")
        f.write(f"tensors {len(info)}\n")
        for (pname, n, bound, psum), gn in zip(info, norms):
            f.write("%s %d %.17g %.17g %.9g\n" % (pname, n, bound, psum, gn))
        dense(f, "input", x.reshape(-1).tolist())
        dense(f, "labels", y.tolist(), fmt="%d")
        dense(f, "loss", [loss.item()])
        dense(f, "logits", logits.detach().reshape(-1).tolist())
        if grad_idx is None:
            dense(f, "grads", grads.tolist())
        else:
            sparse(f, "grads", grad_idx, grads.tolist())
        dense(f, "loss2", [loss2.item()])
        sparse(f, "params_step1", step_idx, step1.tolist())
        sparse(f, "params_step2", step_idx, step2.tolist())
    print(f"{path}: {os.path.getsize(path)} bytes, loss {loss.item():.6f}, loss2 {loss2.item():.6f}")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name in MODELS:
        generate(name, outdir)


if __name__ == "__main__":
    main()
