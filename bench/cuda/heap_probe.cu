// heap_probe: can kreplay find the device-side malloc heap and restore it between passes? kreplay
// declines every launch of a module that uses device malloc/free/new/delete (DEVICE_HEAP): a
// kernel that frees what an earlier kernel allocated frees it twice when replayed (cuda-samples
// newdelete failed with CUDA_ERROR_LAUNCH_FAILED before the decline). Restoring the heap needs
// its extent, which no API gives; the programming guide also says device-malloc'd memory cannot be
// used with runtime or driver API calls (cudaMemcpy, ...), but a kernel can copy it, as kreplay's
// snapshot kernels copy everything else. This probe asks the driver about a pointer that device
// malloc returned and, where it names a range, replays a freeing kernel with that range restored
// by kernels in between.
//
//   heap_probe [heap_mib]      set the heap limit first (default: leave the 8 MiB default)
//   heap_probe control         replay the freeing kernel with nothing restored (expected to fail)
//   heap_probe checkpoint [heap_mib | null | plain]
//                              (null: ctx left null in the checkpoint's handle; plain: a kernel
//                              without the heap, to tell whether checkpoints work here at all)
//                              save a CUPTI checkpoint (cupti_checkpoint.h) before the freeing
//                              kernel and restore it between its runs: does a checkpoint hold the
//                              heap's state, allocator included? Prints `heap_probe checkpoint ...`
// Prints `heap_probe ...` lines: the heap limit, what cuMemGetAddressRange and
// cuPointerGetAttribute say of the malloc'd pointers, and `heap_probe replay=OK|FAIL ...`. A
// probe, not a test: it asserts nothing.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_checkpoint.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kObjects = 64;

struct Object {
  int value;
  int pad[7];
};

__device__ Object* g_objects[kObjects];

__global__ void create_objects(int base) {
  for (int i = threadIdx.x; i < kObjects; i += blockDim.x) {
    g_objects[i] = new Object;
    if (g_objects[i] != nullptr) g_objects[i]->value = base + i;
  }
}

// newdelete's containerDelete: frees what create_objects allocated.
__global__ void delete_objects(int* sum) {
  for (int i = threadIdx.x; i < kObjects; i += blockDim.x) {
    if (g_objects[i] != nullptr) {
      atomicAdd(sum, g_objects[i]->value);
      delete g_objects[i];
    }
  }
}

__global__ void malloc_one(unsigned long long* out) {
  void* p = malloc(16);
  *out = reinterpret_cast<unsigned long long>(p);
  free(p);
}

__global__ void copy_words(const uint4* src, uint4* dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

const char* cu_name(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}

void describe(const char* what, CUdeviceptr p) {
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = cuMemGetAddressRange(&base, &size, p);
  std::printf("heap_probe %s=0x%llx cuMemGetAddressRange=%s base=0x%llx size=%zu offset=%lld\n",
              what, static_cast<unsigned long long>(p), cu_name(r),
              static_cast<unsigned long long>(base), size,
              static_cast<long long>(p) - static_cast<long long>(base));
  unsigned int type = 0;
  r = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
  CUdeviceptr start = 0;
  size_t range = 0;
  CUresult r2 = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
  CUresult r3 = cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
  std::printf("heap_probe %s memory_type=%s:%u range_start=%s:0x%llx range_size=%s:%zu\n", what,
              cu_name(r), type, cu_name(r2), static_cast<unsigned long long>(start), cu_name(r3),
              range);
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("heap_probe %s: %s\n", what, cudaGetErrorName(e));
  return false;
}

}  // namespace

// The freeing kernel run twice with a CUPTI checkpoint restored in between, then the heap used
// again; one line with what happened.
bool g_ctx_null = false;  // `checkpoint null`: ask with ctx left null, as the header allows

__global__ void bump(int* v) { v[threadIdx.x] += 1; }

// `checkpoint plain`: the same save and restores around a kernel that uses no device heap, so a
// failure of the heap's case can be told from a checkpoint that does not work here at all.
int checkpoint_plain() {
  using namespace NV::Cupti::Checkpoint;
  int* v = nullptr;
  if (!ok(cudaMalloc(&v, 32 * sizeof(int)), "cudaMalloc") ||
      !ok(cudaMemset(v, 0, 32 * sizeof(int)), "cudaMemset") ||
      !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
    return 1;
  CUpti_Checkpoint cp{};
  cp.structSize = CUpti_Checkpoint_STRUCT_SIZE;
  cuCtxGetCurrent(&cp.ctx);
  CUptiResult r = cuptiCheckpointSave(&cp);
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::printf("heap_probe checkpoint plain save=%s\n", msg ? msg : "?");
  if (r != CUPTI_SUCCESS) return 0;
  int got = -1;
  for (int pass = 0; pass < 3; ++pass) {
    if (pass > 0) {
      r = cuptiCheckpointRestore(&cp);
      cuptiGetResultString(r, &msg);
      if (r != CUPTI_SUCCESS) std::printf("heap_probe checkpoint plain restore=%s\n", msg ? msg : "?");
    }
    bump<<<1, 32>>>(v);
    cudaMemcpy(&got, v, sizeof(int), cudaMemcpyDeviceToHost);
  }
  std::printf("heap_probe checkpoint plain replay=%s value=%d (1 when every restore held)\n",
              got == 1 ? "OK" : "FAIL", got);
  cuptiCheckpointFree(&cp);
  return 0;
}

int checkpoint_probe(int* sum) {
  using namespace NV::Cupti::Checkpoint;
  create_objects<<<1, 64>>>(1000);
  if (!ok(cudaDeviceSynchronize(), "create_objects")) return 1;
  CUpti_Checkpoint cp{};
  cp.structSize = CUpti_Checkpoint_STRUCT_SIZE;
  // The current context, named (with ctx null the save answered CUPTI_ERROR_NOT_INITIALIZED on
  // an H100, 2026-12-07; `checkpoint null` keeps asking that way).
  cp.ctx = nullptr;
  if (!g_ctx_null) cuCtxGetCurrent(&cp.ctx);
  cp.allowOverwrite = 1;
  cp.optimizations = 1;  // CUPTI_CHECKPOINT_OPT_TRANSFER: restore only what changed
  CUptiResult r = cuptiCheckpointSave(&cp);
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::printf("heap_probe checkpoint save=%s\n", msg ? msg : "?");
  if (r != CUPTI_SUCCESS) return 0;
  int expected = 0;
  for (int i = 0; i < kObjects; ++i) expected += 1000 + i;
  int got[3] = {};
  for (int pass = 0; pass < 3; ++pass) {
    if (pass > 0) {
      r = cuptiCheckpointRestore(&cp);
      cuptiGetResultString(r, &msg);
      if (r != CUPTI_SUCCESS) {
        std::printf("heap_probe checkpoint restore=%s pass=%d\n", msg ? msg : "?", pass);
        return 0;
      }
    }
    cudaMemset(sum, 0, sizeof(int));
    delete_objects<<<1, 64>>>(sum);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("heap_probe checkpoint replay=FAIL pass=%d %s\n", pass, cudaGetErrorName(e));
      return 0;
    }
    cudaMemcpy(&got[pass], sum, sizeof(int), cudaMemcpyDeviceToHost);
  }
  cuptiCheckpointFree(&cp);
  create_objects<<<1, 64>>>(2000);
  cudaError_t after = cudaDeviceSynchronize();
  int again = 0;
  if (after == cudaSuccess) {
    cudaMemset(sum, 0, sizeof(int));
    delete_objects<<<1, 64>>>(sum);
    after = cudaDeviceSynchronize();
    cudaMemcpy(&again, sum, sizeof(int), cudaMemcpyDeviceToHost);
  }
  const int expected_again = expected + 1000 * kObjects;
  const bool good = got[0] == expected && got[1] == expected && got[2] == expected &&
                    after == cudaSuccess && again == expected_again;
  std::printf("heap_probe checkpoint replay=%s sums=%d,%d,%d expected=%d afterwards=%s,%d "
              "expected=%d\n",
              good ? "OK" : "FAIL", got[0], got[1], got[2], expected, cudaGetErrorName(after),
              again, expected_again);
  return 0;
}

int main(int argc, char** argv) {
  const bool checkpoint = argc > 1 && std::strcmp(argv[1], "checkpoint") == 0;
  if (checkpoint) {
    if (argc > 2 && std::strcmp(argv[2], "plain") == 0) return checkpoint_plain();
    g_ctx_null = argc > 2 && std::strcmp(argv[2], "null") == 0;
    if (argc > 2 && !g_ctx_null) {
      size_t mib = std::strtoull(argv[2], nullptr, 10);
      ok(cudaDeviceSetLimit(cudaLimitMallocHeapSize, mib << 20), "cudaDeviceSetLimit");
    }
    int* sum = nullptr;
    if (!ok(cudaMalloc(&sum, sizeof(int)), "cudaMalloc")) return 1;
    return checkpoint_probe(sum);
  }
  const bool control = argc > 1 && std::strcmp(argv[1], "control") == 0;
  if (argc > 1 && !control) {
    size_t mib = std::strtoull(argv[1], nullptr, 10);
    ok(cudaDeviceSetLimit(cudaLimitMallocHeapSize, mib << 20), "cudaDeviceSetLimit");
  }
  int* sum = nullptr;
  unsigned long long* out = nullptr;
  if (!ok(cudaMalloc(&sum, sizeof(int)), "cudaMalloc") ||
      !ok(cudaMalloc(&out, sizeof(*out)), "cudaMalloc"))
    return 1;
  create_objects<<<1, 64>>>(1000);
  if (!ok(cudaDeviceSynchronize(), "create_objects")) return 1;
  size_t limit = 0;
  cudaDeviceGetLimit(&limit, cudaLimitMallocHeapSize);
  std::printf("heap_probe heap_limit=%zu\n", limit);

  malloc_one<<<1, 1>>>(out);
  unsigned long long probe = 0;
  if (!ok(cudaMemcpy(&probe, out, sizeof(probe), cudaMemcpyDeviceToHost), "malloc_one")) return 1;
  describe("malloc_one", probe);
  Object* objects[kObjects] = {};
  cudaMemcpyFromSymbol(objects, g_objects, sizeof(objects));
  describe("object0", reinterpret_cast<CUdeviceptr>(objects[0]));
  describe("object63", reinterpret_cast<CUdeviceptr>(objects[kObjects - 1]));

  // The snapshot: the range the driver names for the malloc'd pointer, copied by a kernel.
  CUdeviceptr base = 0;
  size_t size = 0;
  const bool ranged = cuMemGetAddressRange(&base, &size, probe) == CUDA_SUCCESS && size > 0;
  uint4* saved = nullptr;
  if (ranged && !control) {
    if (!ok(cudaMalloc(&saved, size), "cudaMalloc(snapshot)")) return 1;
    copy_words<<<264, 256>>>(reinterpret_cast<const uint4*>(base), saved, size / sizeof(uint4));
    if (!ok(cudaDeviceSynchronize(), "snapshot kernel")) return 1;
    CUresult r = cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(saved), base, size);
    std::printf("heap_probe cuMemcpyDtoD of the range: %s\n", cu_name(r));
    if (r != CUDA_SUCCESS) {
      // Copy again with the kernel: the failed copy wrote nothing we rely on.
      copy_words<<<264, 256>>>(reinterpret_cast<const uint4*>(base), saved, size / sizeof(uint4));
    }
    cudaDeviceSynchronize();
  }
  // Pass 1 frees the objects; then the range is restored (or not, under control); pass 2 frees
  // them again, as a replay does.
  int expected = 0;
  for (int i = 0; i < kObjects; ++i) expected += 1000 + i;
  int got[2] = {};
  for (int pass = 0; pass < 2; ++pass) {
    cudaMemset(sum, 0, sizeof(int));
    delete_objects<<<1, 64>>>(sum);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::printf("heap_probe replay=FAIL pass=%d %s (restored=%s)\n", pass, cudaGetErrorName(e),
                  ranged && !control ? "yes" : "no");
      return 0;
    }
    cudaMemcpy(&got[pass], sum, sizeof(int), cudaMemcpyDeviceToHost);
    if (pass == 0 && ranged && !control) {
      copy_words<<<264, 256>>>(saved, reinterpret_cast<uint4*>(base), size / sizeof(uint4));
      if (!ok(cudaDeviceSynchronize(), "restore kernel")) return 1;
    }
  }
  // The heap still works afterwards: allocate and free again.
  create_objects<<<1, 64>>>(2000);
  cudaError_t after = cudaDeviceSynchronize();
  int again = 0;
  if (after == cudaSuccess) {
    cudaMemset(sum, 0, sizeof(int));
    delete_objects<<<1, 64>>>(sum);
    after = cudaDeviceSynchronize();
    cudaMemcpy(&again, sum, sizeof(int), cudaMemcpyDeviceToHost);
  }
  const int expected_again = expected + 1000 * kObjects;
  const bool good = got[0] == expected && got[1] == expected && after == cudaSuccess &&
                    again == expected_again;
  std::printf("heap_probe replay=%s sums=%d,%d expected=%d afterwards=%s,%d expected=%d "
              "(restored=%s, %zu bytes)\n",
              good ? "OK" : "FAIL", got[0], got[1], expected, cudaGetErrorName(after), again,
              expected_again, ranged && !control ? "yes" : "no", ranged ? size : 0);
  return 0;
}
