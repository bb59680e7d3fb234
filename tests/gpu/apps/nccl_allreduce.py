#!/usr/bin/env python3
"""nccl_allreduce: pins that collective communication kernels are never replayed. Two processes,
one GPU each, alternate in-place tensor updates (ordinary kernels: replayed) with an in-place NCCL
all_reduce (a collective kernel: replayed alone it would wait for ever for the other rank, which
does not replay; it must be declined as COLLECTIVE and run once). Each rank checks its tensor
against a CPU computation and prints `KREPLAY_RESULT nccl_rank<r> <FNV-1a digest>`. Exits 77 with
fewer than 2 GPUs or without torch / NCCL."""
import os
import sys

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:
    print(f"SKIP: torch not importable ({e})", file=sys.stderr)
    sys.exit(77)

ROUNDS = 4
N = 1 << 16


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def expected(world):
    # Rank r starts from (r + 1) * i; every round: x = 2 x + 1 on each rank, then the sum of ranks.
    base = torch.arange(N, dtype=torch.float64)
    xs = [base * (r + 1) for r in range(world)]
    for _ in range(ROUNDS):
        xs = [x * 2 + 1 for x in xs]
        s = sum(xs)
        xs = [s.clone() for _ in range(world)]
    return xs[0]


def run(rank, world, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x = torch.arange(N, dtype=torch.float64, device="cuda") * (rank + 1)
    for _ in range(ROUNDS):
        x.mul_(2).add_(1)   # ordinary kernels
        dist.all_reduce(x)  # the collective kernel
    torch.cuda.synchronize()
    host = x.cpu()
    ref = expected(world)
    if not torch.equal(host, ref):
        bad = (host != ref).nonzero()[0].item()
        print(f"rank {rank}: x[{bad}] = {host[bad].item()}, expected {ref[bad].item()}", file=sys.stderr)
        sys.exit(1)
    print(f"KREPLAY_RESULT nccl_rank{rank} {fnv1a64(host.numpy().tobytes()):016x}", flush=True)
    dist.destroy_process_group()


def main():
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        print("SKIP: fewer than 2 GPUs", file=sys.stderr)
        sys.exit(77)
    if not dist.is_nccl_available():
        print("SKIP: torch has no NCCL", file=sys.stderr)
        sys.exit(77)
    port = 29500 + os.getpid() % 1000
    mp.spawn(run, args=(2, port), nprocs=2, join=True)


if __name__ == "__main__":
    main()
