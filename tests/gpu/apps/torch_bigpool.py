#!/usr/bin/env python3
"""torch_bigpool: a PyTorch training step while PyTorch's caching allocator holds most of the GPU
(for write-bounded snapshots: tests/gpu/writeset_check.py, bench/writeset_bench.py).

Before training, one tensor of TORCH_BIGPOOL_FRACTION (default 0.62) of the GPU's total memory
(torch.cuda.mem_get_info) is allocated, 1 MiB of it written (one fill kernel), and deleted: the
caching allocator keeps the segment reserved (checked: torch.cuda.memory_reserved() holds it, and
is above 0.6 of the total at the default fraction), so the process holds one cudaMalloc of more
than 60% of the GPU for the whole run, as a training job near capacity does. The training's
tensors larger than 1 MiB (activations, their gradients) are carved out of that cached segment;
the small ones (weights, biases) come from small segments of their own.
TORCH_BIGPOOL_FRACTION=0 leaves the big block out: the small-footprint variant. The result does
not depend on the fraction.

Training: an MLP 128-1024-64 (tanh, MSE loss), batch 512, 8 steps of SGD with momentum (eager,
PyTorch's default foreach implementation: the weights and momentum buffers are updated in
place). Deterministic: weights and data from seeded CPU generators,
torch.use_deterministic_algorithms(True), CUBLAS_WORKSPACE_CONFIG=:4096:8 (unless set), TF32
off. Checked against the same training in float64 on the CPU; prints

  KREPLAY_APP_INFO torch_bigpool ... reserved_fraction=<memory_reserved()/total after the del> ...
  KREPLAY_RESULT torch_bigpool <FNV-1a digest over the final weights and the step losses>

Exits 77 when torch is not importable or there is no GPU; 1 on a mismatch, a bad
TORCH_BIGPOOL_FRACTION, or a big block that could not be allocated or was not kept cached.
KREPLAY_APP_CPU=1 runs it on the CPU (no big block), only to check the program's logic."""
import os
import sys

from kreplay_gpu_common import fnv1a64, torch_or_skip

APP = "torch_bigpool"
CPU = os.environ.get("KREPLAY_APP_CPU") == "1"
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS


def fraction_from_env():
    text = os.environ.get("TORCH_BIGPOOL_FRACTION", "").strip()
    if not text:
        return 0.62
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 0.95:
        print(f"{APP}: TORCH_BIGPOOL_FRACTION='{text}' is not a number in [0, 0.95)",
              file=sys.stderr)
        sys.exit(1)
    return value


FRACTION = fraction_from_env()

torch = torch_or_skip(need_cuda=not CPU)

D_IN, D_HID, D_OUT, BATCH = 128, 1024, 64, 512
STEPS, LR, MOMENTUM = 8, 0.05, 0.9
GIB = float(1 << 30)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(D_IN, D_HID)
        self.fc2 = torch.nn.Linear(D_HID, D_OUT)

    def forward(self, x, y):
        return torch.nn.functional.mse_loss(self.fc2(torch.tanh(self.fc1(x))), y)


def make_optimizer(net):
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    # Momentum buffers from the start (0.9 * 0 + g == g): every step runs the same kernels.
    for p in net.parameters():
        opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
    return opt


def train(net, opt, x, y):
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = net(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return torch.stack(losses)


def hold_big_block(dev):
    """Allocate FRACTION of the GPU in one tensor, write 1 MiB of it, delete it: the caching
    allocator keeps it reserved. Returns (total, big_bytes, reserved after the del) or exits 1."""
    free, total = torch.cuda.mem_get_info(dev)
    big = int(FRACTION * total) // (2 << 20) * (2 << 20)  # whole 2 MiB pages
    if big == 0:
        return total, 0, torch.cuda.memory_reserved(dev)
    if big > free - (512 << 20):
        print(f"{APP}: FAIL: the big block of {big / GIB:.2f} GiB ({FRACTION} of "
              f"{total / GIB:.2f} GiB) does not fit in the {free / GIB:.2f} GiB free "
              "(leaving 512 MiB)", file=sys.stderr)
        sys.exit(1)
    try:
        block = torch.empty(big, dtype=torch.uint8, device=dev)
    except RuntimeError as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
        print(f"{APP}: FAIL: allocating the big block of {big / GIB:.2f} GiB failed: {e}",
              file=sys.stderr)
        sys.exit(1)
    block[: 1 << 20].fill_(1)  # touch a little of it, as a real first use would
    torch.cuda.synchronize(dev)
    del block
    reserved = torch.cuda.memory_reserved(dev)
    if reserved < big:
        print(f"{APP}: FAIL: after del the allocator holds {reserved / GIB:.2f} GiB, less than "
              f"the big block's {big / GIB:.2f} GiB (PYTORCH_NO_CUDA_MEMORY_CACHING or "
              f"PYTORCH_CUDA_ALLOC_CONF='{os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')}'?)",
              file=sys.stderr)
        sys.exit(1)
    if FRACTION >= 0.6 and not reserved > 0.6 * total:
        print(f"{APP}: FAIL: memory_reserved() {reserved / GIB:.2f} GiB is not above 0.6 of "
              f"the total {total / GIB:.2f} GiB", file=sys.stderr)
        sys.exit(1)
    return total, big, reserved


def main():
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cpu" if CPU else "cuda", 0)

    if CPU:
        total, big, reserved = 0, 0, 0
    else:
        torch.cuda.init()
        total, big, reserved = hold_big_block(dev)

    torch.manual_seed(20240611)  # the Linear layers' initial weights (CPU generator)
    init = Net()
    gen = torch.Generator().manual_seed(11)
    x0 = torch.randn(BATCH, D_IN, generator=gen)
    y0 = torch.randn(BATCH, D_OUT, generator=gen) * 0.5

    net = Net().to(dev)
    net.load_state_dict(init.state_dict())
    opt = make_optimizer(net)
    losses = train(net, opt, x0.to(dev), y0.to(dev))
    if not CPU:
        torch.cuda.synchronize(dev)
    params = [p.detach().cpu() for p in net.parameters()]
    losses = losses.cpu()

    if CPU:
        info = "device=cpu reserved_fraction=0"
    else:
        peak = torch.cuda.max_memory_reserved(dev)
        end = torch.cuda.memory_reserved(dev)
        info = (f"device='{torch.cuda.get_device_name(dev)}' total_bytes={total} "
                f"big_block_bytes={big} reserved_bytes={reserved} "
                f"reserved_fraction={reserved / total:.4f} "
                f"reserved_fraction_end={end / total:.4f} "
                f"max_reserved_fraction={peak / total:.4f}")
    print(f"KREPLAY_APP_INFO {APP} torch={torch.__version__} fraction={FRACTION} {info} "
          f"steps={STEPS} loss_first={losses[0].item():.6f} loss_last={losses[-1].item():.6f}",
          flush=True)

    # Reference: the same steps, float64, on the CPU.
    ref = Net().double()
    ref.load_state_dict(init.state_dict())
    ref_opt = make_optimizer(ref)
    ref_losses = train(ref, ref_opt, x0.double(), y0.double())

    bad = 0
    for name, got, want in zip([n for n, _ in net.named_parameters()], params, ref.parameters()):
        want = want.detach()
        if not torch.allclose(got.double(), want, rtol=1e-4, atol=1e-5):
            err = (got.double() - want).abs().max().item()
            print(f"{name} differs from the CPU reference: max abs error {err:.3g}",
                  file=sys.stderr)
            bad += 1
    if not torch.allclose(losses.double(), ref_losses.detach(), rtol=1e-4, atol=1e-6):
        print(f"losses differ from the CPU reference: {losses.tolist()} vs "
              f"{ref_losses.tolist()}", file=sys.stderr)
        bad += 1
    if bad:
        return 1
    digest = fnv1a64([t.numpy().tobytes() for t in params] + [losses.numpy().tobytes()])
    print(f"KREPLAY_RESULT {APP} {digest:016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
