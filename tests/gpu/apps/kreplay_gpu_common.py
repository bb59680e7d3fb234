"""What the framework applications in tests/gpu/apps share: the digest they print
(`KREPLAY_RESULT <app> <digest>`, compared between a plain run and runs under kreplay) and the
check for what Triton needs to build its launcher, and the skip (exit 77) when torch or a GPU for it
is missing. Imported from the script's own folder: the
source tree's tests/gpu/apps, or the build tree's bin/, where the build copies it."""
import os
import shutil
import sys
import sysconfig


# FNV-1a (64-bit) over the bytes of every chunk, in order.
def fnv1a64(chunks):
    h = 0xCBF29CE484222325
    for data in chunks:
        for byte in data:
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def missing_build_tools():
    """Why Triton could not build its launcher here (it compiles C against Python.h), or None."""
    if not (os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")):
        return "no C compiler (gcc, clang or $CC), which Triton needs to build its launcher"
    scheme = sysconfig.get_default_scheme()  # as Triton does: Debian's posix_local -> posix_prefix
    scheme = "posix_prefix" if scheme == "posix_local" else scheme
    include = sysconfig.get_paths(scheme=scheme)["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        return f"no {include}/Python.h, which Triton needs to build its launcher"
    return None


def torch_or_skip(need_cuda=True):
    """torch, imported; exits 77 (a skip) with one line when it is not importable or, with
    @need_cuda, when it sees no GPU."""
    try:
        import torch
    except ImportError as e:
        print(f"SKIP: torch not importable ({e})", file=sys.stderr)
        sys.exit(77)
    if need_cuda and not torch.cuda.is_available():
        print("SKIP: torch.cuda.is_available() is False", file=sys.stderr)
        sys.exit(77)
    return torch
