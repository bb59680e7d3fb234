#!/usr/bin/env python3
"""ddp_train: a few PyTorch DistributedDataParallel training steps over NCCL (issue 15 item 4),
one rank per GPU, launched by torchrun (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT from its
environment; run alone it is one rank of one). Each rank trains a small MLP on its own seeded
batches; DDP's gradient all_reduce (NCCL collective kernels, which kreplay must decline and run
once) keeps the ranks' weights equal. Deterministic: seeded data and weights, TF32 off,
deterministic algorithms. Each rank checks that its weights equal rank 0's (broadcast and
compared) and prints `KREPLAY_RESULT ddp_rank<r> <FNV-1a digest of its weights>`. Exits 77
without torch, NCCL or a GPU for its local rank."""
import os
import sys

from kreplay_gpu_common import fnv1a64

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
try:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:
    print(f"SKIP: torch not importable ({e})", file=sys.stderr)
    sys.exit(77)

STEPS = 6


def main():
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    if not torch.cuda.is_available() or local >= torch.cuda.device_count():
        print(f"SKIP: no GPU for local rank {local}", file=sys.stderr)
        sys.exit(77)
    if not dist.is_nccl_available():
        print("SKIP: torch has no NCCL", file=sys.stderr)
        sys.exit(77)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", rank=rank, world_size=world)

    torch.manual_seed(1234)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).to(dev)
    ddp = DDP(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(99 + rank)  # each rank its own batches
    for _ in range(STEPS):
        x = torch.randn(128, 256, generator=gen).to(dev)
        y = torch.randint(0, 10, (128,), generator=gen).to(dev)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()

    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    first = flat.clone()
    dist.broadcast(first, src=0)
    if not torch.equal(flat, first):
        bad = (flat != first).nonzero()[0].item()
        print(f"rank {rank}: weight {bad} = {flat[bad].item()}, rank 0 has {first[bad].item()}",
              file=sys.stderr)
        sys.exit(1)
    if not torch.isfinite(flat).all():
        print(f"rank {rank}: weights not finite", file=sys.stderr)
        sys.exit(1)
    digest = fnv1a64([flat.cpu().numpy().tobytes()])
    print(f"KREPLAY_RESULT ddp_rank{rank} {digest:016x}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
