#!/usr/bin/env python3
"""cupy_ops: pins replay under CuPy (its memory pool, NVRTC-compiled kernels, Thrust, cuBLAS).
Six rounds, each of:
  RawKernel   x = fmaf(x, 0.75, y) in place (float32); block 0 also counts its launches with an
              atomicAdd, so a pass that is not undone shows up as a count above the number of rounds
  sort        keys = (keys * 7 + round) % 1000003 (elementwise, in place), then keys.sort() in place
  GEMM        c += a @ b (float64, cuBLAS), the product in a temporary from the pool
then a loop that allocates and frees arrays of three sizes so that the default memory pool hands
freed blocks out again (checked: the pool grows by at most one block of each size).
Deterministic: seeded data, integer sorting, float64 GEMM (cuBLAS gives the same bits run to run),
kernels compiled into a fresh cache directory per run (CUPY_CACHE_DIR, removed at exit). Checked
against NumPy; prints `KREPLAY_RESULT cupy_ops <FNV-1a digest>` over x, the launch count, keys, c
and the pool loop's accumulator. Exits 77 when there is no usable GPU or no CuPy."""
import atexit
import os
import shutil
import sys
import tempfile

from kreplay_gpu_common import fnv1a64

CACHE = tempfile.mkdtemp(prefix="kreplay_cupy_ops_")
atexit.register(shutil.rmtree, CACHE, True)
os.environ["CUPY_CACHE_DIR"] = CACHE

try:
    import numpy as np
    import cupy as cp
except ImportError as e:
    print(f"SKIP: cupy or numpy not importable ({e})", file=sys.stderr)
    sys.exit(77)
try:
    NDEV = cp.cuda.runtime.getDeviceCount()
except Exception as e:  # CUDARuntimeError: no device, no driver
    print(f"SKIP: CuPy sees no GPU ({e})", file=sys.stderr)
    sys.exit(77)
if NDEV == 0:
    print("SKIP: CuPy sees no GPU", file=sys.stderr)
    sys.exit(77)

N, M, ROUNDS, MODULUS = 1 << 14, 96, 6, 1000003
FMA_SRC = r"""
extern "C" __global__ void fma_inplace(float* x, const float* y, float a, int n,
                                       unsigned long long* launches) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) atomicAdd(launches, 1ULL);
  if (i < n) x[i] = fmaf(x[i], a, y[i]);
}
"""


def main():
    rng = np.random.default_rng(20240611)
    x0 = (rng.random(N, dtype=np.float32) + 0.5).astype(np.float32)
    y0 = (rng.random(N, dtype=np.float32) + 0.25).astype(np.float32)
    keys0 = rng.integers(0, MODULUS, N, dtype=np.int64)
    a0, b0 = rng.random((M, M)) - 0.5, rng.random((M, M)) - 0.5
    c0 = rng.random((M, M)) + 0.5

    fma = cp.RawKernel(FMA_SRC, "fma_inplace")
    x, y, keys = cp.asarray(x0), cp.asarray(y0), cp.asarray(keys0)
    a, b, c = cp.asarray(a0), cp.asarray(b0), cp.asarray(c0)
    launches = cp.zeros(1, dtype=cp.uint64)
    block = 256
    grid = (N + block - 1) // block
    for r in range(ROUNDS):
        fma((grid,), (block,), (x, y, np.float32(0.75), np.int32(N), launches))
        cp.multiply(keys, 7, out=keys)
        cp.add(keys, r, out=keys)
        cp.remainder(keys, MODULUS, out=keys)
        keys.sort()
        prod = cp.matmul(a, b)
        c += prod
        del prod

    # The pool: 4 rounds of 3 sizes, each array freed before the next is made.
    pool = cp.get_default_memory_pool()
    sizes = (1 << 16, 3 << 14, 1 << 18)  # bytes
    acc = cp.zeros(1024, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    before = pool.total_bytes()
    same_ptr, last = 0, {}
    for k in range(4 * len(sizes)):
        s = sizes[k % len(sizes)]
        t = cp.full(s // 4, k, dtype=cp.float32)
        acc += t[:1024]
        same_ptr += last.get(s) == t.data.ptr
        last[s] = t.data.ptr
        del t
    cp.cuda.Device().synchronize()
    grown = pool.total_bytes() - before

    # NumPy reference (x in float64, rounded to float32 each round as fmaf rounds once; exact for
    # the integers).
    xr, kr, cr = x0.astype(np.float64), keys0.copy(), c0.copy()
    for r in range(ROUNDS):
        xr = (xr * 0.75 + y0.astype(np.float64)).astype(np.float32).astype(np.float64)
        kr = np.sort((kr * 7 + r) % MODULUS)
        cr = cr + a0 @ b0
    accr = np.full(1024, sum(range(4 * len(sizes))), dtype=np.float32)
    xg, lg, kg, cg, ag = (cp.asnumpy(v) for v in (x, launches, keys, c, acc))
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode(errors="replace") if isinstance(name, bytes) else name
    print(f"KREPLAY_APP_INFO cupy_ops cupy={cp.__version__} "
          f"cuda_runtime={cp.cuda.runtime.runtimeGetVersion()} rounds={ROUNDS} "
          f"pool_allocations={4 * len(sizes)} pool_growth={grown} same_address_again={same_ptr} "
          f"pool_total={pool.total_bytes()} pool_free_blocks={pool.n_free_blocks()} "
          f"device={name}", flush=True)
    bad = 0
    if not np.allclose(xg, xr, rtol=1e-6, atol=1e-6):
        print(f"x differs from NumPy: max abs error {np.abs(xg - xr).max():.3g}", file=sys.stderr)
        bad += 1
    if int(lg[0]) != ROUNDS:
        print(f"the RawKernel counted {int(lg[0])} launches, expected {ROUNDS}", file=sys.stderr)
        bad += 1
    if not np.array_equal(kg, kr):
        print(f"keys differ from NumPy at {int(np.nonzero(kg != kr)[0][0])}", file=sys.stderr)
        bad += 1
    if not np.allclose(cg, cr, rtol=1e-10, atol=1e-10):
        print(f"c differs from NumPy: max abs error {np.abs(cg - cr).max():.3g}", file=sys.stderr)
        bad += 1
    if not np.array_equal(ag, accr):
        print(f"pool loop accumulator {ag[:4]} != {accr[:4]}", file=sys.stderr)
        bad += 1
    if grown > sum(sizes):
        print(f"the memory pool grew by {grown} bytes for 12 arrays of at most {sum(sizes)} bytes "
              "per round: freed blocks were not reused", file=sys.stderr)
        bad += 1
    if bad:
        return 1
    digest = fnv1a64(v.tobytes() for v in (xg, lg, kg, cg, ag))
    print(f"KREPLAY_RESULT cupy_ops {digest:016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
