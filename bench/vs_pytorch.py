#!/usr/bin/python3
"""poet's training step against PyTorch's on this CPU: the same network, batch and optimizer.

A developer tool (Debian's python3-torch and python3-torchvision), not needed to build or
test poet. Each round runs `poet train` and the PyTorch step below as separate processes,
one after the other, so that both see the same machine; it reports per model the median of
the rounds' median step times, their ratio (taken within each round, then the median), and
each process's peak RSS (from wait4). Usage, from the repository:

  OMP_NUM_THREADS=1 /usr/bin/python3 bench/vs_pytorch.py --threads 1 [--rounds 3] [--models lenet5,...]

Both sides: synthetic data, SGD with momentum 0.9 (lr 0.01), checkpoint-all (poet at a 100%
budget), batch norm in training mode, dropout on. The PyTorch networks mirror poet's zoo
(src/models/): lenet5, resnet18_cifar and the transformer block are written out below;
resnet18 and mobilenet_v2 are torchvision's, whose parameter counts poet's equal.

PyTorch's matrix products (nn.Linear, the attention's) go to the system BLAS. Debian's
python3-torch runs them on whichever libblas.so.3 the alternatives system points to, the
reference BLAS unless an optimized one is installed, which made its transformer step 6.2 s
instead of 0.8 s here. So PyTorch runs on OpenBLAS when Debian's libopenblas0-pthread is
installed (its library first on LD_LIBRARY_PATH, for the PyTorch process alone: poet's own
products are oneDNN's), and the report names the BLAS PyTorch loaded.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

# A PyTorch step this many times poet's is PyTorch misbehaving (a slow kernel path on this
# CPU), not poet being fast: such rows get a warning under the table.
ANOMALOUS = 3

# Debian's libopenblas0-pthread puts its libblas.so.3 here.
OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"

# model: (batch, poet's --max-batches)
MODELS = {
    "lenet5": (32, 60),
    "resnet18_cifar": (32, 12),
    "resnet18": (4, 8),
    "mobilenet_v2": (4, 8),
    "transformer": (1, 8),
}


def torch_network(name):
    import torch
    from torch import nn
    import torchvision

    if name == "lenet5":
        net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                            nn.Linear(84, 10))
        return net, (1, 28, 28), 10
    if name == "resnet18_cifar":
        class Block(nn.Module):
            def __init__(self, cin, planes, stride):
                super().__init__()
                self.c1, self.b1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
                self.c2, self.b2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False), nn.BatchNorm2d(planes)
                self.c3, self.b3 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)

            def forward(self, x):
                r = torch.relu(self.b1(self.c1(x)))
                r = torch.relu(self.b2(self.c2(r)))
                return torch.relu(r + self.b3(self.c3(x)))

        layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)]
        cin = 16
        for s, planes in enumerate([16, 32, 64]):
            for b in range(2):
                layers.append(Block(cin, planes, 2 if s > 0 and b == 0 else 1))
                cin = planes
        layers += [nn.AvgPool2d(8, 1), nn.Flatten(), nn.Linear(64, 10)]
        return nn.Sequential(*layers), (3, 32, 32), 10
    if name == "resnet18":
        return torchvision.models.resnet18(), (3, 224, 224), 1000
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(), (3, 224, 224), 1000
    if name == "transformer":
        class Block(nn.Module):  # poet's faithful block: post-norm BERT, tanh GELU
            def __init__(self, hidden=768, heads=12):
                super().__init__()
                self.heads = heads
                self.q, self.k, self.v = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
                self.proj, self.ff1, self.ff2 = nn.Linear(hidden, hidden), nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
                self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
                self.drop = nn.Dropout(0.1)
                self.classifier = nn.Linear(hidden, 2)

            def split(self, t):
                b, s, h = t.shape
                return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

            def forward(self, x):
                q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
                probs = self.drop(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1))
                context = (probs @ v).transpose(1, 2).reshape(x.shape)
                ln1 = self.ln1(x + self.drop(self.proj(context)))
                ff = self.drop(self.ff2(nn.functional.gelu(self.ff1(ln1), approximate="tanh")))
                return self.classifier(self.ln2(ln1 + ff)).reshape(-1, 2)

        return Block(), (512, 768), 2
    raise SystemExit(f"vs_pytorch.py: no PyTorch network for '{name}'")


def torch_steps(name, batch, steps, threads):
    """Runs in a child process: the median step time of `steps` steps after 3 warm-up steps."""
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net, shape, classes = torch_network(name)
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, *shape)
    rows = batch * 512 if name == "transformer" else batch
    labels = torch.randint(0, classes, (rows,))
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for step in range(steps + 3):
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), labels)
        loss.backward()
        optimizer.step()
        if step >= 3:
            times.append(time.perf_counter() - began)
    with open("/proc/self/maps") as maps:
        blas = sorted({line.split()[-1] for line in maps if "libblas" in line or "libopenblas" in line})
    print(json.dumps({"median_step_s": statistics.median(times), "blas": blas}))


def run(argv, env):
    """Runs a command; returns its stdout and its peak RSS in bytes."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"vs_pytorch.py: {' '.join(argv)} failed (status {status})")
    return out.decode(), usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--poet", default="build/poet")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, batch, steps = args.child.split(":")
        torch_steps(name, int(batch), int(steps), args.threads)
        return
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    torch_env = dict(env, OPENBLAS_NUM_THREADS=str(args.threads))
    if os.path.isdir(OPENBLAS_DIR):
        torch_env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [OPENBLAS_DIR, env.get("LD_LIBRARY_PATH")]))
    torch_blas = set()
    print(f"| model | batch | threads | poet median step | PyTorch median step | poet / PyTorch | poet peak RSS | PyTorch peak RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    warnings = []
    for name in args.models.split(","):
        batch, steps = MODELS[name]
        poet_s, torch_s, ratios, poet_rss, torch_rss = [], [], [], [], []
        for _ in range(args.rounds):
            out, rss = run([args.poet, "train", "-m", name, "--dataset", "synthetic", "--batch-size", str(batch),
                            "--ram-budget", "100%", "--strategy", "checkpoint_all", "--optimizer", "momentum",
                            "--lr", "0.01", "--epochs", "1", "--max-batches", str(steps), "--json"], env)
            poet_s.append(json.loads(out)["median_step_s"])
            poet_rss.append(rss)
            out, rss = run([sys.executable, __file__, "--threads", str(args.threads), "--child",
                            f"{name}:{batch}:{steps}"], torch_env)
            torch_s.append(json.loads(out)["median_step_s"])
            torch_blas.update(json.loads(out)["blas"])
            torch_rss.append(rss)
            ratios.append(poet_s[-1] / torch_s[-1])
        ms = lambda s: f"{1e3 * statistics.median(s):.3g} ms"
        mib = lambda b: f"{max(b) / 2**20:.0f} MiB"
        print(f"| {name} | {batch} | {args.threads} | {ms(poet_s)} | {ms(torch_s)} | {statistics.median(ratios):.2f}x "
              f"({min(ratios):.2f}-{max(ratios):.2f}) | {mib(poet_rss)} | {mib(torch_rss)} |", flush=True)
        if statistics.median(ratios) < 1 / ANOMALOUS:
            warnings.append(f"{name}: PyTorch's step is {1 / statistics.median(ratios):.0f}x poet's. Read that row as "
                            "PyTorch running anomalously on this machine (seen: its mobilenet_v2 at one thread), not as "
                            "poet's speed; compare another thread count or machine.")
    print(f"\nPyTorch's BLAS: {', '.join(sorted(torch_blas)) or 'none loaded'}")
    if not any("openblas" in path for path in torch_blas):
        warnings.append("PyTorch's matrix products ran on the reference BLAS, many times slower than an optimized one; "
                        "install Debian's libopenblas0-pthread for a fair comparison.")
    for warning in warnings:
        print(f"\nWarning: {warning}")


if __name__ == "__main__":
    main()
