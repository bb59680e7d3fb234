#!/usr/bin/env python3
"""triton_kernels: pins replay of kernels written with @triton.jit (JIT-compiled at their first
launch, loaded with cuModuleLoadData, launched by Triton's own launcher through cuLaunchKernelEx).
Six rounds, each of:
  scale_shift_  x = x * 0.75 + 0.5 in place (float32)
  histogram     hist[k % 256] += 1 for every key k (int32 atomics; hist is never cleared, so a pass
                that is not undone counts twice) and total += sum of the keys (one int64 atomic per
                program)
  torch ops     keys = (keys * 5 + round) % 100003, in place
Deterministic: seeded CPU data, integer atomics (their sums do not depend on order), no autotuning.
Checked against NumPy; prints `KREPLAY_RESULT triton_kernels <FNV-1a digest>` over x, hist and
total. Triton caches compiled kernels in a fresh directory per run (TRITON_CACHE_DIR, removed at
exit). Exits 77 when there is no usable GPU, no torch or triton, or no C compiler / Python.h for
Triton's launcher. KREPLAY_APP_CPU=1 runs the kernels in Triton's interpreter on the CPU, only to
check the program's logic without a GPU."""
import atexit
import os
import shutil
import sys
import tempfile

from kreplay_gpu_common import fnv1a64, missing_build_tools

CPU = os.environ.get("KREPLAY_APP_CPU") == "1"
CACHE = tempfile.mkdtemp(prefix="kreplay_triton_kernels_")
atexit.register(shutil.rmtree, CACHE, True)
os.environ["TRITON_CACHE_DIR"] = CACHE
if CPU:
    os.environ["TRITON_INTERPRET"] = "1"


try:
    import numpy as np
    import torch
    import triton
    import triton.language as tl
except ImportError as e:
    print(f"SKIP: torch, triton or numpy not importable ({e})", file=sys.stderr)
    sys.exit(77)
if not CPU and not torch.cuda.is_available():
    print("SKIP: torch.cuda.is_available() is False", file=sys.stderr)
    sys.exit(77)
if not CPU and missing_build_tools():
    print(f"SKIP: {missing_build_tools()}", file=sys.stderr)
    sys.exit(77)

N, NBINS, ROUNDS, BLOCK = 50000, 256, 6, 1024  # N is no multiple of BLOCK: the masks matter
MODULUS = 100003


@triton.jit
def scale_shift_(x_ptr, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * a + b, mask=mask)


@triton.jit
def histogram(keys_ptr, hist_ptr, total_ptr, n, NBINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    keys = tl.load(keys_ptr + offs, mask=mask, other=0)
    ones = tl.full((BLOCK,), 1, dtype=tl.int32)
    tl.atomic_add(hist_ptr + keys % NBINS, ones, mask=mask)
    tl.atomic_add(total_ptr, tl.sum(keys.to(tl.int64), axis=0))


def main():
    dev = torch.device("cpu" if CPU else "cuda")
    rng = np.random.default_rng(20240611)
    x0 = (rng.random(N, dtype=np.float32) + 0.5).astype(np.float32)
    keys0 = rng.integers(0, MODULUS, N, dtype=np.int32)

    x = torch.from_numpy(x0.copy()).to(dev)
    keys = torch.from_numpy(keys0.copy()).to(dev)
    hist = torch.zeros(NBINS, dtype=torch.int32, device=dev)
    total = torch.zeros(1, dtype=torch.int64, device=dev)
    grid = (triton.cdiv(N, BLOCK),)
    for r in range(ROUNDS):
        scale_shift_[grid](x, N, 0.75, 0.5, BLOCK=BLOCK)
        histogram[grid](keys, hist, total, N, NBINS=NBINS, BLOCK=BLOCK)
        keys.mul_(5).add_(r).remainder_(MODULUS)  # stays below 2^31: 5 * 100002 + 5
    if not CPU:
        torch.cuda.synchronize()

    # NumPy reference: x in float64 rounded to float32 each round (the GPU may fuse the
    # multiply-add), exact for the integers.
    xr, kr = x0.astype(np.float64), keys0.astype(np.int64)
    hr, tr = np.zeros(NBINS, dtype=np.int64), 0
    for r in range(ROUNDS):
        xr = (xr * 0.75 + 0.5).astype(np.float32).astype(np.float64)
        hr += np.bincount(kr % NBINS, minlength=NBINS)
        tr += int(kr.sum())
        kr = (kr * 5 + r) % MODULUS
    xg, hg, tg = x.cpu().numpy(), hist.cpu().numpy(), total.cpu().numpy()
    print(f"KREPLAY_APP_INFO triton_kernels triton={triton.__version__} torch={torch.__version__} "
          f"rounds={ROUNDS} n={N} launches={2 * ROUNDS} total={int(tg[0])} "
          f"device={'cpu (interpreter)' if CPU else torch.cuda.get_device_name(0)}", flush=True)
    bad = 0
    if not np.allclose(xg, xr, rtol=1e-6, atol=1e-6):
        print(f"x differs from NumPy: max abs error {np.abs(xg - xr).max():.3g}", file=sys.stderr)
        bad += 1
    if not np.array_equal(hg.astype(np.int64), hr):
        i = int(np.nonzero(hg != hr)[0][0])
        print(f"hist[{i}] = {hg[i]}, expected {hr[i]} (sum {hg.sum()} vs {hr.sum()})",
              file=sys.stderr)
        bad += 1
    if int(tg[0]) != tr:
        print(f"total = {int(tg[0])}, expected {tr}", file=sys.stderr)
        bad += 1
    if not np.array_equal(keys.cpu().numpy().astype(np.int64), kr):
        print("keys differ from NumPy", file=sys.stderr)
        bad += 1
    if bad:
        return 1
    digest = fnv1a64(a.tobytes() for a in (xg, hg, tg))
    print(f"KREPLAY_RESULT triton_kernels {digest:016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
