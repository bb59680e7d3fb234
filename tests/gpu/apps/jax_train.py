#!/usr/bin/env python3
"""jax_train: pins replay under JAX/XLA. A jit-compiled training step of a tiny MLP (64-128-32,
tanh, MSE loss, SGD with momentum) whose parameters and momentum buffers are donated
(donate_argnums): XLA writes the new values into the old buffers, so every step updates device
memory in place. 10 steps; the first compiles. Preallocation is off
(XLA_PYTHON_CLIENT_PREALLOCATE=false: device memory is allocated as the program needs it); XLA's
other defaults, CUDA graphs ("command buffers") included, are left as they are.

Deterministic: seeded NumPy data, float32 matmuls at full precision (jax_default_matmul_precision
"highest", no TF32), XLA_FLAGS --xla_gpu_deterministic_ops=true and --xla_gpu_autotune_level=0 (no
timing-based choice of kernels, which a profiler's slower passes could change), unless the caller's
XLA_FLAGS already sets them. Checked against the same training in float64 NumPy; prints
`KREPLAY_RESULT jax_train <FNV-1a digest>` over the final parameters and the step losses. Exits 77
when JAX is not importable or its default backend is not a GPU. KREPLAY_APP_CPU=1 runs it on the
CPU, only to check the program's logic on a machine without a GPU.

  jax_train.py                    app jax_train, as above
  jax_train.py --prealloc-default app jax_default: XLA_PYTHON_CLIENT_PREALLOCATE is not set (and
                                  removed if the caller set it), so JAX preallocates its default
                                  75% of the GPU as one arena before the first step (for
                                  write-bounded snapshots, tests/gpu/writeset_check.py); the
                                  KREPLAY_APP_INFO line adds the arena's figures from
                                  memory_stats(); everything else, the digest's computation
                                  included, is the same"""
import os
import sys

from kreplay_gpu_common import fnv1a64

CPU = os.environ.get("KREPLAY_APP_CPU") == "1"
PREALLOC_DEFAULT = "--prealloc-default" in sys.argv[1:]
APP = "jax_default" if PREALLOC_DEFAULT else "jax_train"
if PREALLOC_DEFAULT:
    os.environ.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)  # JAX's default: preallocate 75%
else:
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
_flags = os.environ.get("XLA_FLAGS", "").split()
for _flag in ("--xla_gpu_deterministic_ops=true", "--xla_gpu_autotune_level=0"):
    if not any(f.split("=")[0] == _flag.split("=")[0] for f in _flags):
        _flags.append(_flag)
os.environ["XLA_FLAGS"] = " ".join(_flags)
if CPU:
    os.environ["JAX_PLATFORMS"] = "cpu"

try:
    import numpy as np
    import jax
    import jax.numpy as jnp
except ImportError as e:
    print(f"SKIP: jax or numpy not importable ({e})", file=sys.stderr)
    sys.exit(77)

D_IN, D_HID, D_OUT, BATCH = 64, 128, 32, 256
STEPS, LR, MOMENTUM = 10, 0.05, 0.9


def loss_fn(params, x, y):
    w1, b1, w2, b2 = params
    out = jnp.tanh(x @ w1 + b1) @ w2 + b2
    return jnp.mean((out - y) ** 2)


def train_step(params, moms, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    moms = tuple(MOMENTUM * m + g for m, g in zip(moms, grads))
    params = tuple(p - LR * m for p, m in zip(params, moms))
    return params, moms, loss


def reference(params, x, y):  # the same steps in float64 NumPy, gradients by hand
    params = [p.astype(np.float64) for p in params]
    x, y = x.astype(np.float64), y.astype(np.float64)
    moms = [np.zeros_like(p) for p in params]
    losses = []
    for _ in range(STEPS):
        w1, b1, w2, b2 = params
        h = np.tanh(x @ w1 + b1)
        d = h @ w2 + b2 - y
        losses.append(np.mean(d ** 2))
        d = 2.0 * d / d.size
        dh = (d @ w2.T) * (1.0 - h ** 2)
        grads = [x.T @ dh, dh.sum(0), h.T @ d, d.sum(0)]
        moms = [MOMENTUM * m + g for m, g in zip(moms, grads)]
        params = [p - LR * m for p, m in zip(params, moms)]
    return params, np.array(losses)


def main():
    backend = jax.default_backend()
    if backend not in ("gpu", "cuda") and not CPU:
        print(f"SKIP: JAX's default backend is {backend}, not gpu", file=sys.stderr)
        return 77
    jax.config.update("jax_default_matmul_precision", "highest")

    rng = np.random.default_rng(20240611)
    init = [(rng.standard_normal((D_IN, D_HID)) / np.sqrt(D_IN)).astype(np.float32),
            (rng.standard_normal(D_HID) * 0.1).astype(np.float32),
            (rng.standard_normal((D_HID, D_OUT)) / np.sqrt(D_HID)).astype(np.float32),
            (rng.standard_normal(D_OUT) * 0.1).astype(np.float32)]
    x0 = rng.standard_normal((BATCH, D_IN)).astype(np.float32)
    y0 = (rng.standard_normal((BATCH, D_OUT)) * 0.5).astype(np.float32)

    step = jax.jit(train_step, donate_argnums=(0, 1))
    params = tuple(jnp.asarray(p) for p in init)
    moms = tuple(jnp.zeros_like(p) for p in params)
    x, y = jnp.asarray(x0), jnp.asarray(y0)
    losses, donated = [], 0
    for _ in range(STEPS):
        old = params + moms
        params, moms, loss = step(params, moms, x, y)
        donated += sum(a.is_deleted() for a in old)  # a donated input is deleted by the call
        losses.append(loss)
    params = [np.asarray(p) for p in params]
    losses = np.array([np.asarray(v) for v in losses], dtype=np.float32)

    dev = jax.devices()[0]
    arena = ""
    if PREALLOC_DEFAULT:
        try:
            stats = dev.memory_stats() or {}
        except Exception as e:  # noqa: BLE001 (a backend without memory_stats)
            stats = {"error": type(e).__name__}
        arena = "".join(f" {k}={stats[k]}" for k in ("bytes_limit", "bytes_reserved",
                                                      "bytes_in_use", "peak_bytes_in_use",
                                                      "error") if k in stats)
        arena += (" XLA_PYTHON_CLIENT_MEM_FRACTION="
                  f"{os.environ.get('XLA_PYTHON_CLIENT_MEM_FRACTION', 'unset')}")
    print(f"KREPLAY_APP_INFO {APP} jax={jax.__version__} backend={backend} "
          f"device={dev.device_kind} steps={STEPS} donated_buffers={donated}/{STEPS * 8} "
          f"XLA_PYTHON_CLIENT_PREALLOCATE="
          f"{os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE', 'unset')}{arena} "
          f"XLA_FLAGS='{os.environ['XLA_FLAGS']}' loss_first={losses[0]:.6f} "
          f"loss_last={losses[-1]:.6f}", flush=True)
    ref_params, ref_losses = reference(init, x0, y0)
    bad = 0
    for name, got, want in zip(("w1", "b1", "w2", "b2"), params, ref_params):
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            print(f"{name} differs from NumPy: max abs error {np.abs(got - want).max():.3g}",
                  file=sys.stderr)
            bad += 1
    if not np.allclose(losses, ref_losses, rtol=1e-4, atol=1e-6):
        print(f"losses differ from NumPy: {losses} vs {ref_losses}", file=sys.stderr)
        bad += 1
    if donated != STEPS * 8:
        print(f"only {donated} of {STEPS * 8} donated buffers were donated", file=sys.stderr)
        bad += 1
    if bad:
        return 1
    digest = fnv1a64([p.tobytes() for p in params] + [losses.tobytes()])
    print(f"KREPLAY_RESULT {APP} {digest:016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
