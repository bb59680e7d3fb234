#!/usr/bin/env python3
"""torch_nvtx_steps: a PyTorch training loop whose steps are NVTX ranges, for selection by markers
(issue 31 item 5; tests/gpu/nvtxsel_check.py).

  torch_nvtx_steps.py [--mode nvtx|profiler] [--steps N]

Every step (a small MLP: forward, MSE loss, backward, SGD update in place; fixed data from a
seeded CPU generator, TF32 off) runs the same kernels. Between steps the program does work of its
own outside any step (a cumulative sum over a buffer, then a copy back to the host), so a
selection that leaks outside the steps is seen. --mode nvtx wraps every step in
torch.cuda.nvtx.range("step") and step 3 also in the start/end range "step3" (nvtx.range_start /
range_end); --mode profiler calls torch.cuda.profiler.start() before step 3
and torch.cuda.profiler.stop() after it (nothing else is inside). Prints
`KREPLAY_APP_INFO torch_nvtx_steps steps=N mode=M` and
`KREPLAY_RESULT torch_nvtx_steps <FNV-1a digest>` over the final parameters and the outside
buffer. Exits 77 when there is no usable GPU (or no torch)."""
import argparse
import sys

from kreplay_gpu_common import fnv1a64, torch_or_skip

torch = torch_or_skip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("nvtx", "profiler"), default="nvtx")
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)
    gen = torch.Generator().manual_seed(31)
    w1 = (torch.rand(64, 128, generator=gen) - 0.5).to(dev).requires_grad_()
    w2 = (torch.rand(128, 16, generator=gen) - 0.5).to(dev).requires_grad_()
    x = (torch.rand(256, 64, generator=gen) - 0.5).to(dev)
    y = (torch.rand(256, 16, generator=gen) - 0.5).to(dev)
    outside = torch.arange(4096, dtype=torch.int64, device=dev)
    torch.cuda.synchronize()

    def step():
        h = torch.relu(x @ w1)
        loss = ((h @ w2 - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w1.sub_(0.05 * w1.grad)
            w2.sub_(0.05 * w2.grad)
            w1.grad = None
            w2.grad = None

    for i in range(args.steps):
        if args.mode == "nvtx":
            # Step 3 is also a start/end range, which (unlike push/pop) holds every thread's
            # launches: PyTorch runs backward on an autograd thread of its own.
            rid = torch.cuda.nvtx.range_start("step3") if i == 2 else None
            with torch.cuda.nvtx.range("step"):
                step()
            if rid is not None:
                torch.cuda.nvtx.range_end(rid)
        else:
            if i == 2:
                torch.cuda.profiler.start()
            step()
            if i == 2:
                torch.cuda.profiler.stop()
        # Work outside every step: an integer scan, read back.
        outside = torch.cumsum(outside, 0) % 1000003
        _ = int(outside[-1].item())
    torch.cuda.synchronize()
    print(f"KREPLAY_APP_INFO torch_nvtx_steps steps={args.steps} mode={args.mode}")
    chunks = [t.detach().cpu().contiguous().numpy().tobytes() for t in (w1, w2, outside)]
    print(f"KREPLAY_RESULT torch_nvtx_steps {fnv1a64(chunks):016x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
