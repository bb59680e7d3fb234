// device_heap: kernels that use the device-side heap across launches (issue "device heap"): the
// program must end exactly as it does without kreplay, whatever kreplay does with these launches
// (today they are declined DEVICE_HEAP and run once; write-bounded snapshots may replay some).
//
// cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 MiB) first. Then, with one thread per object
// (4096 threads):
//   alloc_first   in-kernel `new` of one Obj per thread (a few floats, a counter, an id, a next
//                 pointer); the pointers go into a global array;
//   update x3     the objects in place through those pointers: x = fma(x, a, b), count += 1;
//   scratch       device malloc of a scratch array, used and freed in the same launch; its sum
//                 goes into the object (x[0] += c * sum, count += 10);
//   link_second   `new` of a second Obj per thread, derived from the first, linked as next;
//   update x2     both objects of every thread (the second through the first's next pointer);
//   drop_first    `delete` of the first objects, the array now points at the second ones;
//   update x2     the second objects;
//   finish        the objects copied into a plain result buffer, then `delete`d, array cleared.
// A heap allocation that fails, or an object that is missing or not the thread's, sets a bit of
// an error word. Checked exactly against a CPU reference (fmaf on both sides, the same order of
// float operations); the array must read all null at the end. Prints
//   KREPLAY_APP_INFO device_heap heap_bytes=<n> objects=<n> launches=<n>
//   KREPLAY_RESULT device_heap <digest over the results' x, counts and ids>
#include "common.cuh"

#include <cmath>

namespace {

constexpr int kObjects = 4096;
constexpr unsigned kThreads = 256;
constexpr int kScratch = 8;  // floats in the scratch allocation of the malloc/free launch
constexpr size_t kHeapBytes = 64u << 20;

constexpr int kErrNew = 1;      // new returned null
constexpr int kErrMissing = 2;  // the array held no object (or no second object) for a thread
constexpr int kErrMalloc = 4;   // malloc returned null
constexpr int kErrWrongId = 8;  // an object belongs to another thread

}  // namespace

struct Obj {
  float x[4];
  int count;
  int id;
  Obj* next;
};

__global__ void alloc_first(Obj** ptrs, const float* seed, int* err) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kObjects) return;
  Obj* o = new Obj;
  if (o == nullptr) {
    atomicOr(err, kErrNew);
    ptrs[i] = nullptr;
    return;
  }
  for (int k = 0; k < 4; ++k) o->x[k] = seed[4 * i + k];
  o->count = 0;
  o->id = i;
  o->next = nullptr;
  ptrs[i] = o;
}

__device__ void update_one(Obj* o, float a, float b, int inc) {
  for (int k = 0; k < 4; ++k) o->x[k] = __fmaf_rn(o->x[k], a, b);
  o->count += inc;
}

// The thread's object, updated in place; with follow_next also its second object (which the
// first links), with the roles of a and b swapped and count += 2.
__global__ void update(Obj** ptrs, float a, float b, int follow_next, int second_ids, int* err) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kObjects) return;
  Obj* o = ptrs[i];
  if (o == nullptr) {
    atomicOr(err, kErrMissing);
    return;
  }
  if (o->id != (second_ids ? i + kObjects : i)) atomicOr(err, kErrWrongId);
  update_one(o, a, b, 1);
  if (follow_next) {
    if (o->next == nullptr) {
      atomicOr(err, kErrMissing);
      return;
    }
    update_one(o->next, b, a, 2);
  }
}

// malloc and free inside one launch: a scratch array filled from the object, summed in order.
__global__ void scratch(Obj** ptrs, float c, int* err) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kObjects) return;
  Obj* o = ptrs[i];
  if (o == nullptr) {
    atomicOr(err, kErrMissing);
    return;
  }
  float* s = static_cast<float*>(malloc(kScratch * sizeof(float)));
  if (s == nullptr) {
    atomicOr(err, kErrMalloc);
    return;
  }
  for (int j = 0; j < kScratch; ++j) s[j] = __fmul_rn(o->x[j % 4], static_cast<float>(j + 1));
  float sum = 0.0f;
  for (int j = 0; j < kScratch; ++j) sum = __fadd_rn(sum, s[j]);
  free(s);
  o->x[0] = __fmaf_rn(sum, c, o->x[0]);
  o->count += 10;
}

__global__ void link_second(Obj** ptrs, int* err) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kObjects) return;
  Obj* o = ptrs[i];
  if (o == nullptr) {
    atomicOr(err, kErrMissing);
    return;
  }
  Obj* o2 = new Obj;
  if (o2 == nullptr) {
    atomicOr(err, kErrNew);
    return;
  }
  for (int k = 0; k < 4; ++k) o2->x[k] = __fmaf_rn(o->x[k], 0.5f, 1.0f + static_cast<float>(k));
  o2->count = o->count * 3;
  o2->id = i + kObjects;
  o2->next = nullptr;
  o->next = o2;
}

__global__ void drop_first(Obj** ptrs, int* err) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kObjects) return;
  Obj* o = ptrs[i];
  if (o == nullptr || o->next == nullptr) {
    atomicOr(err, kErrMissing);
    return;
  }
  ptrs[i] = o->next;
  delete o;
}

__global__ void finish(Obj** ptrs, float* out_x, int* out_count, int* out_id, int* err) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kObjects) return;
  Obj* o = ptrs[i];
  if (o == nullptr) {
    atomicOr(err, kErrMissing);
    return;
  }
  for (int k = 0; k < 4; ++k) out_x[4 * i + k] = o->x[k];
  out_count[i] = o->count;
  out_id[i] = o->id;
  delete o;
  ptrs[i] = nullptr;
}

namespace {

struct RefObj {
  float x[4];
  int count;
  int id;
};

void ref_update(RefObj& o, float a, float b, int inc) {
  for (float& v : o.x) v = std::fmaf(v, a, b);
  o.count += inc;
}

}  // namespace

int main() {
  kr::require_gpu();
  KR_CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, kHeapBytes));
  size_t heap = 0;
  KR_CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  KR_EXPECT(heap >= kHeapBytes, "heap limit %zu after asking for %zu", heap, kHeapBytes);

  std::vector<float> seed(4 * kObjects);
  {
    kr::Rng r(0x68656170ull);  // "heap"
    for (float& v : seed) v = r.signed_unit();
  }
  Obj** ptrs = nullptr;
  float *d_seed = nullptr, *d_x = nullptr;
  int *d_count = nullptr, *d_id = nullptr, *d_err = nullptr;
  KR_CHECK(cudaMalloc(&ptrs, kObjects * sizeof(Obj*)));
  KR_CHECK(cudaMalloc(&d_seed, seed.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&d_x, seed.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&d_count, kObjects * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_id, kObjects * sizeof(int)));
  KR_CHECK(cudaMalloc(&d_err, sizeof(int)));
  KR_CHECK(cudaMemcpy(d_seed, seed.data(), seed.size() * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemset(ptrs, 0, kObjects * sizeof(Obj*)));
  KR_CHECK(cudaMemset(d_x, 0, seed.size() * sizeof(float)));
  KR_CHECK(cudaMemset(d_count, 0, kObjects * sizeof(int)));
  KR_CHECK(cudaMemset(d_id, 0xff, kObjects * sizeof(int)));
  KR_CHECK(cudaMemset(d_err, 0, sizeof(int)));

  // (a, b) of the in-place updates, in order; the same list drives the CPU reference.
  struct Upd {
    float a, b;
    int follow_next, second_ids;
  };
  const Upd first[3] = {{1.25f, 0.5f, 0, 0}, {0.75f, -0.25f, 0, 0}, {1.125f, 0.0625f, 0, 0}};
  const Upd both[2] = {{0.875f, 0.375f, 1, 0}, {1.0625f, -0.125f, 1, 0}};
  const Upd second[2] = {{0.625f, 0.75f, 0, 1}, {1.5f, -0.5f, 0, 1}};
  constexpr float kScratchC = 0.03125f;
  const unsigned blocks = kr::blocks_for(kObjects, kThreads);
  int launches = 0;
  auto launch_update = [&](const Upd& u) {
    update<<<blocks, kThreads>>>(ptrs, u.a, u.b, u.follow_next, u.second_ids, d_err);
    KR_CHECK_LAUNCH();
    ++launches;
  };

  alloc_first<<<blocks, kThreads>>>(ptrs, d_seed, d_err);
  KR_CHECK_LAUNCH();
  ++launches;
  for (const Upd& u : first) launch_update(u);
  scratch<<<blocks, kThreads>>>(ptrs, kScratchC, d_err);
  KR_CHECK_LAUNCH();
  ++launches;
  link_second<<<blocks, kThreads>>>(ptrs, d_err);
  KR_CHECK_LAUNCH();
  ++launches;
  for (const Upd& u : both) launch_update(u);
  drop_first<<<blocks, kThreads>>>(ptrs, d_err);
  KR_CHECK_LAUNCH();
  ++launches;
  for (const Upd& u : second) launch_update(u);
  finish<<<blocks, kThreads>>>(ptrs, d_x, d_count, d_id, d_err);
  KR_CHECK_LAUNCH();
  ++launches;
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<float> x(seed.size());
  std::vector<int> count(kObjects), id(kObjects);
  std::vector<Obj*> left(kObjects);
  int err = 0;
  KR_CHECK(cudaMemcpy(x.data(), d_x, x.size() * sizeof(float), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(count.data(), d_count, kObjects * sizeof(int), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(id.data(), d_id, kObjects * sizeof(int), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(left.data(), ptrs, kObjects * sizeof(Obj*), cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(&err, d_err, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("KREPLAY_APP_INFO device_heap heap_bytes=%zu objects=%d launches=%d\n", heap,
              kObjects, launches);
  std::fflush(stdout);

  // CPU reference, in the launches' order.
  std::vector<RefObj> a(kObjects), b(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    for (int k = 0; k < 4; ++k) a[i].x[k] = seed[4 * i + k];
    a[i].count = 0;
    a[i].id = i;
  }
  for (const Upd& u : first)
    for (auto& o : a) ref_update(o, u.a, u.b, 1);
  for (auto& o : a) {
    float s[kScratch];
    for (int j = 0; j < kScratch; ++j) {
      volatile float p = o.x[j % 4] * static_cast<float>(j + 1);  // rounded, never fused
      s[j] = p;
    }
    float sum = 0.0f;
    for (int j = 0; j < kScratch; ++j) sum = sum + s[j];
    o.x[0] = std::fmaf(sum, kScratchC, o.x[0]);
    o.count += 10;
  }
  for (int i = 0; i < kObjects; ++i) {
    for (int k = 0; k < 4; ++k)
      b[i].x[k] = std::fmaf(a[i].x[k], 0.5f, 1.0f + static_cast<float>(k));
    b[i].count = a[i].count * 3;
    b[i].id = i + kObjects;
  }
  for (const Upd& u : both) {
    for (int i = 0; i < kObjects; ++i) {
      ref_update(a[i], u.a, u.b, 1);
      ref_update(b[i], u.b, u.a, 2);
    }
  }
  for (const Upd& u : second)
    for (auto& o : b) ref_update(o, u.a, u.b, 1);

  KR_EXPECT(err == 0,
            "the kernels flagged errors 0x%x (1 new failed, 2 object missing, 4 malloc "
            "failed, 8 object of another thread)",
            err);
  for (int i = 0; i < kObjects; ++i) {
    KR_EXPECT(left[i] == nullptr, "pointer %d still set after finish", i);
    KR_EXPECT(id[i] == b[i].id, "object %d: id %d, expected %d", i, id[i], b[i].id);
    KR_EXPECT(count[i] == b[i].count, "object %d: count %d, CPU %d", i, count[i], b[i].count);
    for (int k = 0; k < 4; ++k) {
      KR_EXPECT(std::memcmp(&x[4 * i + k], &b[i].x[k], sizeof(float)) == 0,
                "object %d x[%d] = %a, CPU %a", i, k, x[4 * i + k], b[i].x[k]);
    }
  }

  kr::Digest d;
  d.add(x);
  d.add(count);
  d.add(id);
  KR_CHECK(cudaFree(ptrs));
  KR_CHECK(cudaFree(d_seed));
  KR_CHECK(cudaFree(d_x));
  KR_CHECK(cudaFree(d_count));
  KR_CHECK(cudaFree(d_id));
  KR_CHECK(cudaFree(d_err));
  d.print("device_heap");
  return 0;
}
