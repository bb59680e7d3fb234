#!/usr/bin/env python3
"""torch_train: a PyTorch training step as an application runs it: a small MLP (64 -> 128 -> 10,
ReLU), cross-entropy loss, backward, SGD with momentum (the foreach implementation), repeated for
a few steps on one fixed batch. Everything in place on the device: the parameters, their
gradients, the momentum buffers, PyTorch's caching allocator. Deterministic: seeded CPU data and
initial weights, TF32 off, torch.use_deterministic_algorithms(True). Checked against the same
steps in float64 on the CPU; prints `RESULT torch_train PASS digest=<hex>` (BLAKE2b-64 over the
final weights' bytes) or `RESULT torch_train FAIL <why>` with exit 1. Exits 77 when torch or a GPU
is missing.
    torch_train.py [steps=2]     about 20-30 kernel launches per step
"""
import copy
import hashlib
import os
import sys

# cuBLAS is deterministic only with a fixed workspace configuration (set before it starts).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

try:
    import torch
except ImportError as e:
    print(f"SKIP: torch not importable ({e})", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch.cuda.is_available() is False", file=sys.stderr)
    sys.exit(77)

NAME = "torch_train"


def make_model(gen):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.rand(p.shape, generator=gen) - 0.5)
    return model


def train(model, x, y, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return loss


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    gen = torch.Generator().manual_seed(20261202)
    model = make_model(gen)
    x = torch.rand(256, 64, generator=gen) * 2 - 1
    y = torch.randint(0, 10, (256,), generator=gen)
    ref = copy.deepcopy(model).double()

    dev = torch.device("cuda", 0)
    model.to(dev)
    loss = train(model, x.to(dev), y.to(dev), steps)
    torch.cuda.synchronize()
    ref_loss = train(ref, x.double(), y, steps)

    got = [p.detach().cpu() for p in model.parameters()]
    for (name, p), g in zip(ref.named_parameters(), got):
        err = (g.double() - p.detach()).abs().max().item()
        if not err <= 1e-4:
            print(f"RESULT {NAME} FAIL {name} differs from the CPU by {err:.3g}", flush=True)
            return 1
    if not abs(loss.item() - ref_loss.item()) <= 1e-4:
        print(f"RESULT {NAME} FAIL loss {loss.item():.7g}, CPU {ref_loss.item():.7g}", flush=True)
        return 1
    h = hashlib.blake2b(digest_size=8)
    for g in got:
        h.update(bytes(g.contiguous().view(torch.uint8).flatten().tolist()))
    print(f"RESULT {NAME} PASS digest={h.hexdigest()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
