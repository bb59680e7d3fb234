#!/usr/bin/env python3
"""torch_compile: pins replay under torch.compile. A tiny MLP (64-128-32, tanh, MSE loss) is
trained for 8 SGD steps with momentum; the first steps compile, the later ones run compiled code.

  torch_compile.py           app torch_compile: default mode (Inductor: Triton kernels, cuBLAS for
                             the matmuls); the optimizer step is compiled too, so Triton kernels
                             update the weights and momentum buffers in place
  torch_compile.py --graphs  app torch_compile_graphs: mode="reduce-overhead" (CUDA graph trees:
                             forward and backward recorded once, then replayed); eager optimizer.
                             Fails unless graphs were replayed and none were skipped.

Deterministic by construction: fixed shapes, weights and data from seeded CPU generators,
torch.use_deterministic_algorithms(True), Inductor's deterministic mode (no benchmarking that
changes numerics), TF32 off, in-process compilation (TORCHINDUCTOR_COMPILE_THREADS=1) into a fresh
cache directory per run (always cold, removed at exit). Checked against the same training in
float64 on the CPU; prints `KREPLAY_RESULT <app> <FNV-1a digest>` over the final weights and the
step losses. Exits 77 when there is no usable GPU, no torch, or no C compiler / Python.h for
Triton. KREPLAY_APP_CPU=1 runs it on the CPU (Inductor's C++ backend), only to check the program's
logic on a machine without a GPU."""
import atexit
import os
import shutil
import sys
import tempfile

from kreplay_gpu_common import fnv1a64, missing_build_tools, torch_or_skip

GRAPHS = "--graphs" in sys.argv[1:]
APP = "torch_compile_graphs" if GRAPHS else "torch_compile"
CPU = os.environ.get("KREPLAY_APP_CPU") == "1"
CACHE = tempfile.mkdtemp(prefix=f"kreplay_{APP}_")
atexit.register(shutil.rmtree, CACHE, True)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(CACHE, "inductor")
os.environ["TRITON_CACHE_DIR"] = os.path.join(CACHE, "triton")
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # no compile worker processes
os.environ["TORCHINDUCTOR_DETERMINISTIC"] = "1"
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS


torch = torch_or_skip(need_cuda=not CPU)
if not CPU and missing_build_tools():
    print(f"SKIP: {missing_build_tools()}", file=sys.stderr)
    sys.exit(77)

D_IN, D_HID, D_OUT, BATCH = 64, 128, 32, 256
STEPS, LR, MOMENTUM = 8, 0.05, 0.9


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(D_IN, D_HID)
        self.fc2 = torch.nn.Linear(D_HID, D_OUT)

    def forward(self, x, y):  # the loss, so that it is part of the compiled graph
        return torch.nn.functional.mse_loss(self.fc2(torch.tanh(self.fc1(x))), y)


def make_optimizer(net):
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    # Zero momentum buffers up front: the first step is then the same code as every other one
    # (one compilation of the optimizer step, not two); 0.9 * 0 + g == g: the same result.
    for p in net.parameters():
        opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
    return opt


def train(net, opt, step, x, y, mark_steps=False):
    losses = []
    for _ in range(STEPS):
        if mark_steps:  # CUDA graph trees: a new iteration begins
            torch.compiler.cudagraph_mark_step_begin()
        opt.zero_grad(set_to_none=True)
        loss = net(x, y)
        loss.backward()
        step()
        losses.append(loss.detach().clone())  # a graph's output is overwritten by its next replay
    return torch.stack(losses)


def main():
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cpu" if CPU else "cuda")

    torch.manual_seed(20240611)  # the Linear layers' initial weights (CPU generator)
    init = Net()
    gen = torch.Generator().manual_seed(7)
    x0 = torch.randn(BATCH, D_IN, generator=gen)
    y0 = torch.randn(BATCH, D_OUT, generator=gen) * 0.5

    # CUDA graph replays, counted at the one place CUDA graph trees replay a graph.
    replays = [0]
    orig_replay = torch.cuda.CUDAGraph.replay

    def counting_replay(self):
        replays[0] += 1
        return orig_replay(self)

    torch.cuda.CUDAGraph.replay = counting_replay
    from torch._dynamo.utils import counters

    net = Net().to(dev)
    net.load_state_dict(init.state_dict())
    opt = make_optimizer(net)
    mode = "reduce-overhead" if GRAPHS else None
    cnet = torch.compile(net, mode=mode)

    @torch.compile(fullgraph=False)
    def compiled_step():  # as in PyTorch's recipe for compiling the optimizer
        opt.step()

    step = opt.step if GRAPHS else compiled_step
    losses = train(cnet, opt, step, x0.to(dev), y0.to(dev), mark_steps=GRAPHS)
    if not CPU:
        torch.cuda.synchronize()
    skips = counters["inductor"]["cudagraph_skips"]

    # Reference: the same steps, eager, float64, on the CPU.
    ref = Net().double()
    ref.load_state_dict(init.state_dict())
    ref_opt = make_optimizer(ref)
    ref_losses = train(ref, ref_opt, ref_opt.step, x0.double(), y0.double())

    params = [p.detach().cpu() for p in net.parameters()]
    device = "cpu" if CPU else torch.cuda.get_device_name(0)
    print(f"KREPLAY_APP_INFO {APP} torch={torch.__version__} mode={mode or 'default'} "
          f"steps={STEPS} device={device} cudagraph_replays={replays[0]} "
          f"cudagraph_skips={skips} dynamo_graphs={counters['stats']['unique_graphs']} "
          f"fxgraph_cache_hits={counters['inductor']['fxgraph_cache_hit']} "
          f"loss_first={losses[0].item():.6f} loss_last={losses[-1].item():.6f}",
          flush=True)
    bad = 0
    for name, got, want in zip([n for n, _ in net.named_parameters()], params, ref.parameters()):
        err = (got.double() - want.detach()).abs().max().item()
        if not torch.allclose(got.double(), want.detach(), rtol=1e-4, atol=1e-5):
            print(f"{name} differs from the CPU reference: max abs error {err:.3g}",
                  file=sys.stderr)
            bad += 1
    if not torch.allclose(losses.cpu().double(), ref_losses, rtol=1e-4, atol=1e-6):
        print(f"losses differ from the CPU reference: {losses.tolist()} vs {ref_losses.tolist()}",
              file=sys.stderr)
        bad += 1
    if GRAPHS and not CPU and (replays[0] == 0 or skips != 0):
        print(f"reduce-overhead ran no CUDA graphs as asked: {replays[0]} replays, {skips} skipped "
              "(TORCH_LOGS=perf_hints says why)", file=sys.stderr)
        bad += 1
    if bad:
        return 1
    chunks = [t.numpy().tobytes() for t in params] + [losses.cpu().numpy().tobytes()]
    digest = fnv1a64(chunks)
    print(f"KREPLAY_RESULT {APP} {digest:016x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
