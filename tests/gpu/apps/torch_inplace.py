#!/usr/bin/env python3
"""torch_inplace: pins replay under PyTorch (caching allocator, its own kernels, cuBLAS through
torch, lazy module loading): in-place tensor updates (add_, mul_, index_add_) and a matrix product
accumulated in place (addmm_, beta = 1), repeated. Deterministic by construction: data comes from
a seeded CPU generator, the float index_add_ uses a permutation (no two atomics on one element),
the integer index_add_ has collisions but integer sums do not depend on order, and TF32 is off.
Checked against a CPU computation; prints `KREPLAY_RESULT torch_inplace <FNV-1a digest>` over the
final tensors' bytes. Exits 77 when there is no usable GPU (or no torch)."""
import sys

from kreplay_gpu_common import fnv1a64, torch_or_skip

torch = torch_or_skip()


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda", 0)
    gen = torch.Generator().manual_seed(20240611)

    n, m = 1 << 14, 96
    x0 = torch.rand(n, generator=gen) + 0.5  # [0.5, 1.5): never zero
    src0 = torch.rand(n, generator=gen) + 0.25
    perm = torch.randperm(n, generator=gen)
    idx_int = torch.randint(0, 1024, (n,), generator=gen)  # collisions on purpose
    ints0 = torch.randint(1, 1 << 20, (1024,), generator=gen, dtype=torch.int64)
    a0 = torch.rand(m, m, generator=gen) - 0.5
    b0 = torch.rand(m, m, generator=gen) - 0.5
    c0 = torch.rand(m, m, generator=gen) + 0.5

    x, src, ints = x0.to(dev), src0.to(dev), ints0.to(dev)
    a, b, c = a0.to(dev), b0.to(dev), c0.to(dev)
    perm_d, idx_d = perm.to(dev), idx_int.to(dev)
    ones = torch.arange(1, n + 1, dtype=torch.int64, device=dev)

    rounds = 5
    for r in range(rounds):
        x.mul_(0.75).add_(1.5)
        x.index_add_(0, perm_d, src, alpha=0.5)
        ints.index_add_(0, idx_d, ones)
        ints.mul_(3).add_(r + 1)
        c.addmm_(a, b)  # c = c + a @ b, in place
    torch.cuda.synchronize()

    # CPU reference (float64 for the product, exact for the integers).
    xr, ir, cr = x0.double(), ints0.clone(), c0.double()
    for r in range(rounds):
        xr = (xr * 0.75 + 1.5).float().double()
        xr = (xr + 0.5 * src0.double()[torch.argsort(perm)]).float().double()
        ir.index_add_(0, idx_int, torch.arange(1, n + 1, dtype=torch.int64))
        ir = ir * 3 + (r + 1)
        cr = cr + a0.double() @ b0.double()
    xg, ig, cg = x.cpu(), ints.cpu(), c.cpu()
    if not torch.allclose(xg.double(), xr, rtol=1e-6, atol=1e-6):
        print(f"x differs from CPU: max {(xg.double() - xr).abs().max().item()}", file=sys.stderr)
        return 1
    if not torch.equal(ig, ir):
        print("integer index_add_ differs from CPU", file=sys.stderr)
        return 1
    if not torch.allclose(cg.double(), cr, rtol=1e-4, atol=1e-4):
        print(f"c differs from CPU: max {(cg.double() - cr).abs().max().item()}", file=sys.stderr)
        return 1

    digest = fnv1a64(t.numpy().tobytes() for t in (xg, ig, cg))
    print(f"KREPLAY_RESULT torch_inplace {digest:016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
