#!/usr/bin/env python3
"""triton_kernels: three kernels written with @triton.jit, JIT-compiled at their first launch
(into a fresh TRITON_CACHE_DIR per run, removed at exit, so every run compiles the same) and
launched by Triton's own launcher. Every round:
  axpy_      x = x + 0.125 y, in place (float32, 65536 elements)
  softmax    s = softmax(x viewed as 256 rows of 256), row by row in one program per row
  matmul_    c = c + fp16(s) @ b, in place (b float16, float32 accumulation, 64x64x32 tiles)
No autotuning; deterministic by construction. Checked against torch on the CPU (float64);
prints `RESULT triton_kernels PASS digest=<hex>` (BLAKE2b-64 over x, s and c) or
`RESULT triton_kernels FAIL <why>` with exit 1. Exits 77 when torch, triton, a GPU, or the C
compiler and Python.h that Triton's launcher is built with are missing.
    triton_kernels.py [rounds=8]     three launches per round: 24 by default
"""
import atexit
import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile

CACHE = tempfile.mkdtemp(prefix="kreplay_real_triton_")
atexit.register(shutil.rmtree, CACHE, True)
os.environ["TRITON_CACHE_DIR"] = CACHE

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:
    print(f"SKIP: torch or triton not importable ({e})", file=sys.stderr)
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: torch.cuda.is_available() is False", file=sys.stderr)
    sys.exit(77)
if not (os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")):
    print("SKIP: no C compiler for Triton's launcher", file=sys.stderr)
    sys.exit(77)
_scheme = sysconfig.get_default_scheme()
_scheme = "posix_prefix" if _scheme == "posix_local" else _scheme  # as Triton reads it (Debian)
_include = sysconfig.get_paths(scheme=_scheme)["include"]
if not os.path.exists(os.path.join(_include, "Python.h")):
    print(f"SKIP: no {_include}/Python.h for Triton's launcher", file=sys.stderr)
    sys.exit(77)

NAME = "triton_kernels"
ROWS = COLS = 256  # x and s: ROWS x COLS; b and c: COLS x COLS
BLOCK = 1024
BM, BN, BK = 64, 64, 32


@triton.jit
def axpy_(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x + alpha * y, mask=mask)


@triton.jit
def softmax(out_ptr, in_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(in_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def matmul_(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # c (M x N, float32) += a (M x K, float32, rounded to float16) @ b (K x N, float16); row-major.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]).to(tl.float16)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, tl.load(c_ptrs) + acc)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    gen = torch.Generator().manual_seed(20261202)
    x0 = torch.rand(ROWS * COLS, generator=gen) * 4 - 2
    y0 = torch.rand(ROWS * COLS, generator=gen) * 2 - 1
    b0 = (torch.rand(COLS, COLS, generator=gen) * 2 - 1).half()
    c0 = torch.rand(ROWS, COLS, generator=gen) - 0.5

    dev = torch.device("cuda", 0)
    x, y, b, c = x0.to(dev), y0.to(dev), b0.to(dev), c0.to(dev)
    s = torch.empty(ROWS, COLS, device=dev)
    n = x.numel()
    for _ in range(rounds):
        axpy_[(triton.cdiv(n, BLOCK),)](x, y, n, 0.125, BLOCK=BLOCK)
        softmax[(ROWS,)](s, x, COLS, BLOCK=triton.next_power_of_2(COLS))
        matmul_[(ROWS // BM, COLS // BN)](s, b, c, ROWS, COLS, COLS, BM=BM, BN=BN, BK=BK)
    torch.cuda.synchronize()
    xg, sg, cg = x.cpu(), s.cpu(), c.cpu()

    # CPU: x in float32 (0.125 y is exact, so fused or not the GPU rounds once, as here), the
    # softmax in float64, the product of the float16-rounded operands in float64.
    xr, cr = x0.clone(), c0.double()
    for _ in range(rounds):
        xr = xr + 0.125 * y0
        sr = torch.softmax(xr.double().view(ROWS, COLS), dim=1)
        cr = cr + sr.float().half().double() @ b0.double()
    checks = [("x", xg.double(), xr.double(), 1e-6), ("s", sg.double(), sr, 1e-6),
              ("c", cg.double(), cr, 5e-3)]
    for name, got, want, tol in checks:
        err = (got - want.view(got.shape)).abs().max().item()
        if not err <= tol:
            print(f"RESULT {NAME} FAIL {name} differs from the CPU by {err:.3g} (tol {tol})",
                  flush=True)
            return 1
    h = hashlib.blake2b(digest_size=8)
    for t in (xg, sg, cg):
        h.update(bytes(t.contiguous().view(torch.uint8).flatten().tolist()))
    print(f"RESULT {NAME} PASS digest={h.hexdigest()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
