#!/usr/bin/python3
"""torch_models.py - ddptop's model zoo (models/zoo.c) written in PyTorch, for
the parameter-count test, the training-step fixtures and the speed
comparison.

Every model takes (in_channels, side, classes) and follows models/zoo.c layer
for layer. Module names are chosen so that named_parameters() gives ddptop's
parameter names in ddptop's flat-buffer order (each layer's weight, then its
bias; PyTorch's [out, in] and [oc, ic/groups, kh, kw] layouts are ddptop's).
lenet, mlp, resnet18 and vgg11 are the common PyTorch reference LeNet, MLP,
ResNet18 and VGG11BN generalised to 3-channel input.

Run with Debian's interpreter (torch 1.13 from python3-torch):
  /usr/bin/python3 bench/torch_models.py count
      one line per model and input shape: NAME C SIDE PARAMS MACS
  /usr/bin/python3 bench/torch_models.py train --model resnet18 --threads 2 \\
      [--batch 64] [--steps S] [--warmup W] [--device cuda [--precision tf32]
      [--cudnn-benchmark]]
      trains on Fashion-MNIST batches held in memory (random data when the
      Debian package is missing) and prints one JSON line with img/s.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import time
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, k, stride=1, pad=0, groups=1):
    """conv (no bias) + BatchNorm2d, as named submodules conv and bn."""
    return nn.Sequential(OrderedDict(conv=nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False),
                                     bn=nn.BatchNorm2d(cout)))


class MLP(nn.Module):
    """zoo.c build_mlp: flatten, 512-512 ReLU, fc to classes."""

    def __init__(self, c=1, side=28, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(c * side * side, 512)
        self.fc2 = nn.Linear(512, 512)
        self.fc3 = nn.Linear(512, classes)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class LeNet(nn.Module):
    """zoo.c build_lenet."""

    def __init__(self, c=1, side=28, classes=10):
        super().__init__()
        s = (side // 2 - 4) // 2
        self.conv1 = nn.Conv2d(c, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(16 * s * s, 120), nn.Linear(120, 84), nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class AlexNet(nn.Module):
    """zoo.c build_alexnet: 3x3 stride-1 convs, pools after conv1, 2, 5,
    adaptive average pool 2x2, dropout-fc1024 classifier."""
    CH = [64, 192, 384, 256, 256]

    def __init__(self, c=1, side=28, classes=10):
        super().__init__()
        cin = c
        for i, v in enumerate(self.CH):
            setattr(self, f"conv{i + 1}", nn.Conv2d(cin, v, 3, 1, 1))
            cin = v
        self.drop1 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(256 * 2 * 2, 1024)
        self.drop2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(1024, 1024)
        self.fc3 = nn.Linear(1024, classes)

    def forward(self, x):
        for i in range(5):
            x = F.relu(getattr(self, f"conv{i + 1}")(x))
            if i in (0, 1, 4):
                x = F.max_pool2d(x, 2)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 2), 1)
        x = F.relu(self.fc1(self.drop1(x)))
        x = F.relu(self.fc2(self.drop2(x)))
        return self.fc3(x)


class VGG(nn.Module):
    """zoo.c build_vgg: common.py's VGG11BN; 28x28 input zero-padded to 32."""
    CFG = {"vgg11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
           "vgg16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]}

    def __init__(self, c=1, side=28, classes=10, cfg="vgg11"):
        super().__init__()
        self.cfg = self.CFG[cfg]
        self.pad = (32 - side) // 2 if side < 32 else 0
        cin, n = c, 0
        for v in self.cfg:
            if v != "M":
                n += 1
                setattr(self, f"conv{n}", nn.Conv2d(cin, v, 3, padding=1))
                setattr(self, f"bn{n}", nn.BatchNorm2d(v))
                cin = v
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        if self.pad:
            x = F.pad(x, (self.pad,) * 4)
        n = 0
        for v in self.cfg:
            if v == "M":
                x = F.max_pool2d(x, 2)
            else:
                n += 1
                x = F.relu(getattr(self, f"bn{n}")(getattr(self, f"conv{n}")(x)))
        return self.fc(torch.flatten(x, 1))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = conv_bn(cin, planes, 1, stride) if stride != 1 or cin != planes else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, 4 * planes, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(4 * planes)
        out = 4 * planes
        self.shortcut = conv_bn(cin, out, 1, stride) if stride != 1 or cin != out else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet(nn.Module):
    """zoo.c build_resnet: common.py's CIFAR ResNet18 (3x3 stride-1 stem, no
    max-pool); Bottleneck blocks for ResNet-50."""

    def __init__(self, c=1, side=28, classes=10, blocks=(2, 2, 2, 2), block=BasicBlock):
        super().__init__()
        self.conv1 = nn.Conv2d(c, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for s, n in enumerate(blocks):
            layer = []
            for b in range(n):
                layer.append(block(cin, 64 << s, 2 if s > 0 and b == 0 else 1))
                cin = (64 << s) * block.expansion
            setattr(self, f"layer{s + 1}", nn.Sequential(*layer))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Fire(nn.Module):
    def __init__(self, cin, sq, e1, e3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, sq, 1)
        self.expand1x1 = nn.Conv2d(sq, e1, 1)
        self.expand3x3 = nn.Conv2d(sq, e3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.squeeze(x))
        return torch.cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    """zoo.c build_squeezenet: torchvision's squeezenet1_0 with a 3x3
    stride-1 stem."""
    FIRES = [(2, 96, 16, 64, 64), (3, 128, 16, 64, 64), (4, 128, 32, 128, 128), (5, 256, 32, 128, 128),
             (6, 256, 48, 192, 192), (7, 384, 48, 192, 192), (8, 384, 64, 256, 256), (9, 512, 64, 256, 256)]

    def __init__(self, c=1, side=28, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(c, 96, 3, 1, 1)
        for i, cin, sq, e1, e3 in self.FIRES:
            setattr(self, f"fire{i}", Fire(cin, sq, e1, e3))
        self.drop = nn.Dropout(0.5)
        self.conv10 = nn.Conv2d(512, classes, 1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 3, 2, ceil_mode=True)
        for i, *_ in self.FIRES:
            x = getattr(self, f"fire{i}")(x)
            if i in (4, 8):
                x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = F.relu(self.conv10(self.drop(x)))
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)


class DenseLayer(nn.Module):
    def __init__(self, cin, growth=32, bn_size=4):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, x):
        y = self.conv1(F.relu(self.norm1(x)))
        y = self.conv2(F.relu(self.norm2(y)))
        return torch.cat([x, y], 1)


class Transition(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.norm(x))), 2)


class DenseNet121(nn.Module):
    """zoo.c build_densenet121: torchvision's densenet121 with a 3x3
    stride-1 stem and no max-pool."""

    def __init__(self, c=1, side=28, classes=10):
        super().__init__()
        self.conv0 = nn.Conv2d(c, 64, 3, 1, 1, bias=False)
        self.norm0 = nn.BatchNorm2d(64)
        cin = 64
        for b, n in enumerate((6, 12, 24, 16)):
            block = nn.Module()
            for i in range(n):
                setattr(block, f"layer{i + 1}", DenseLayer(cin))
                cin += 32
            block.n = n
            setattr(self, f"block{b + 1}", block)
            if b < 3:
                setattr(self, f"trans{b + 1}", Transition(cin, cin // 2))
                cin //= 2
        self.norm5 = nn.BatchNorm2d(cin)
        self.classifier = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.relu(self.norm0(self.conv0(x)))
        for b in range(4):
            block = getattr(self, f"block{b + 1}")
            for i in range(block.n):
                x = getattr(block, f"layer{i + 1}")(x)
            if b < 3:
                x = getattr(self, f"trans{b + 1}")(x)
        x = F.relu(self.norm5(x))
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = cin * t
        self.expand = conv_bn(cin, hidden, 1) if t != 1 else None
        self.dw = conv_bn(hidden, hidden, 3, stride, 1, groups=hidden)
        self.project = conv_bn(hidden, cout, 1)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = F.relu6(self.expand(x)) if self.expand is not None else x
        y = self.project(F.relu6(self.dw(y)))
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """zoo.c build_mobilenetv2: torchvision's blocks, CIFAR strides."""
    CFG = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, c=1, side=28, classes=10):
        super().__init__()
        self.stem = conv_bn(c, 32, 3, 1, 1)
        cin, k = 32, 0
        for t, cout, n, s in self.CFG:
            for i in range(n):
                k += 1
                setattr(self, f"block{k}", InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        self.nblocks = k
        self.head = conv_bn(cin, 1280, 1)
        self.drop = nn.Dropout(0.2)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        x = F.relu6(self.stem(x))
        for k in range(self.nblocks):
            x = getattr(self, f"block{k + 1}")(x)
        x = F.relu6(self.head(x))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.classifier(self.drop(x))


MODELS = OrderedDict([
    ("mlp", MLP),
    ("lenet", LeNet),
    ("alexnet", AlexNet),
    ("vgg11", lambda c, s, k: VGG(c, s, k, "vgg11")),
    ("vgg16", lambda c, s, k: VGG(c, s, k, "vgg16")),
    ("resnet18", lambda c, s, k: ResNet(c, s, k, (2, 2, 2, 2), BasicBlock)),
    ("resnet50", lambda c, s, k: ResNet(c, s, k, (3, 4, 6, 3), Bottleneck)),
    ("resnet101", lambda c, s, k: ResNet(c, s, k, (3, 4, 23, 3), Bottleneck)),
    ("squeezenet1_0", SqueezeNet),
    ("densenet121", DenseNet121),
    ("mobilenetv2", MobileNetV2),
])
SHAPES = [(1, 28), (3, 32)]
# At 224x224 and more zoo.c builds torchvision's ImageNet forms (with 1000
# classes by default); here they are torchvision's own models.
IMAGENET_SIDE = 224
IMAGENET_CLASSES = 1000
TORCHVISION = {"alexnet": "alexnet", "vgg11": "vgg11_bn", "vgg16": "vgg16_bn", "resnet18": "resnet18",
               "resnet50": "resnet50", "resnet101": "resnet101", "squeezenet1_0": "squeezenet1_0",
               "densenet121": "densenet121", "mobilenetv2": "mobilenet_v2"}


def build(name, c=1, side=28, classes=10):
    if side >= IMAGENET_SIDE and name in TORCHVISION:
        import torchvision.models  # python3-torchvision
        if c != 3:
            raise SystemExit(f"{name} at {side}x{side}: torchvision's ImageNet form takes 3 channels")
        return getattr(torchvision.models, TORCHVISION[name])(num_classes=classes)
    return MODELS[name](c, side, classes)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def count_macs(model, c, side):
    """Multiply-accumulates of the Conv2d and Linear layers for one image."""
    macs = []

    def hook(m, inp, out):
        if isinstance(m, nn.Conv2d):
            macs.append(out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1])
        else:
            macs.append(out.numel() * m.in_features)
    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    was = model.training
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, c, side, side, device=next(model.parameters()).device))
    model.train(was)
    for h in hs:
        h.remove()
    return sum(macs)


def load_fashion(n, shape=None):
    """n Fashion-MNIST training images, normalised, or random ones (always
    random when shape, a (C, H, W), is given: ddptop's --input)."""
    path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
    if shape:
        return torch.randn(n, *shape)
    if os.path.exists(path):
        import numpy as np
        with gzip.open(path) as f:
            raw = f.read()
        x = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
        return torch.from_numpy(((x.astype(np.float32) / 255.0 - 0.2860) / 0.3530).copy())
    return torch.randn(n, 1, 28, 28)


def train(a):
    """Each step: zero_grad + forward + cross-entropy + backward + SGD
    (momentum 0.9), as ddptop's step; img/s from the median step. On a GPU
    (--device cuda) each batch is copied from pinned host memory and the
    step ends by reading the loss, as ddptop's does. --precision fp32 is
    FP32 without TF32 (ddptop's --precision fp32), tf32 lets cuDNN and
    cuBLAS use TF32 tensor cores (ddptop's --precision tf32), bf16 runs
    the forward pass and the loss under autocast to bfloat16 (ddptop's
    --precision bf16; on the CPU, oneDNN's bf16 kernels; on a GPU with
    the model and its inputs channels_last, as users run bf16 there),
    fp16 the same with float16 and a GradScaler (dynamic loss scaling, as
    ddptop's --precision fp16); --cudnn-benchmark times cuDNN's algorithms once per shape (ddptop's
    --cudnn-algo find), in the warm-up steps."""
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    shape = tuple(int(v) for v in a.input.split("x")) if a.input else None
    nb = 4 if shape and shape[1] * shape[2] > 64 * 64 else 16  # (224x224: 0.6 MB an image)
    x = load_fashion(nb * a.batch, shape)
    y = torch.randint(0, 10, (x.shape[0],))
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = a.precision == "tf32"
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
        x, y = x.pin_memory(), y.pin_memory()
    classes = IMAGENET_CLASSES if x.shape[2] >= IMAGENET_SIDE else 10  # (ddptop's default --classes)
    model = build(a.model, x.shape[1], x.shape[2], classes).to(dev).train()
    # bf16 on a GPU as users run it: channels_last (tensor cores' layout)
    half = a.precision in ("bf16", "fp16")
    fmt = torch.channels_last if dev.type == "cuda" and half else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dtype = torch.float16 if a.precision == "fp16" else torch.bfloat16
    scaler = None
    if a.precision == "fp16":  # (torch.amp's since PyTorch 2.3, torch.cuda.amp's before)
        scaler = torch.amp.GradScaler(dev.type) if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    times = []
    for i in range(a.warmup + a.steps):
        j = (i % nb) * a.batch
        t0 = time.perf_counter()
        xb = x[j:j + a.batch].to(dev, non_blocking=True).contiguous(memory_format=fmt)
        yb = y[j:j + a.batch].to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=dtype, enabled=half):
            loss = F.cross_entropy(model(xb), yb)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        if dev.type == "cuda":
            loss.item()  # the step's one wait
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    step = statistics.median(times)
    print(json.dumps({"impl": "pytorch", "model": a.model, "device": a.device, "threads": a.threads, "batch": a.batch,
                      "precision": a.precision, "input": list(x.shape[1:]), "cudnn_benchmark": a.cudnn_benchmark, "steps": a.steps, "ms_step": round(step * 1e3, 4), "img_s": round(a.batch / step, 1),
                      "macs_per_img": count_macs(model, x.shape[1], x.shape[2]), "torch": torch.__version__}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("count")
    t = sub.add_parser("train")
    t.add_argument("--model", required=True, choices=list(MODELS))
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--steps", type=int, default=50)
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU")
    t.add_argument("--precision", choices=("fp32", "tf32", "bf16", "fp16"), default="fp32",
                   help="fp32 (on a GPU, TF32 off in cuDNN and cuBLAS), tf32 (GPU: on), bf16 (autocast) or fp16 "
                   "(autocast and GradScaler)")
    t.add_argument("--input", help="CxHxW: random images of that shape (ddptop's --input), instead of Fashion-MNIST")
    t.add_argument("--cudnn-benchmark", action="store_true",
                   help="GPU: cudnn.benchmark, cuDNN's algorithms timed once per shape")
    a = ap.parse_args()
    if a.cmd == "count":
        for name in MODELS:
            for c, side in SHAPES:
                m = build(name, c, side, 10)
                print(name, c, side, count_params(m), count_macs(m, c, side))
    else:
        train(a)


if __name__ == "__main__":
    sys.exit(main())
