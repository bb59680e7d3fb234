// vmm: pins replay over virtual memory management (DESIGN §3, cuMemCreate + cuMemMap), the case
// on which Nsight Compute's multi-pass kernel replay dies with LaunchFailed.
//
//  - one physical allocation P mapped at two virtual addresses: rw (read-write) and ro (read
//    only); kernels write through rw and read the same bytes through ro. A snapshot must save P
//    once and restore it without writing through the read-only alias;
//  - one reservation of three granules with chunks Q0 and Q2 mapped and the middle granule left
//    unmapped: nothing may touch the hole;
//  - everything is unmapped and released at the end.
// The driver calls are reached through cudaGetDriverEntryPointByVersion, as PyTorch reaches them.
#include "common.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

__global__ void write_rw(uint32_t* rw, size_t n, uint32_t salt) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) rw[i] = rw[i] * 5u + salt;
}

// q0 and q2 are the two mapped chunks around the hole; ro aliases what write_rw wrote.
__global__ void read_ro(const uint32_t* ro, uint32_t* q0, uint32_t* q2, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    q0[i] += ro[i];
    q2[i] ^= ro[n - 1 - i] + q0[i];
  }
}

int main() {
  kr::require_gpu();
  auto getAttribute = kr::driver_fn<PFN_cuDeviceGetAttribute_v2000>("cuDeviceGetAttribute");
  auto getGranularity =
      kr::driver_fn<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
  auto memCreate = kr::driver_fn<PFN_cuMemCreate_v10020>("cuMemCreate");
  auto memRelease = kr::driver_fn<PFN_cuMemRelease_v10020>("cuMemRelease");
  auto addressReserve = kr::driver_fn<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  auto addressFree = kr::driver_fn<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  auto memMap = kr::driver_fn<PFN_cuMemMap_v10020>("cuMemMap");
  auto memUnmap = kr::driver_fn<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  auto setAccess = kr::driver_fn<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");

  int vmm_supported = 0;
  KR_CHECK_STATUS(getAttribute(
      &vmm_supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  KR_EXPECT(vmm_supported, "device 0 does not support virtual memory management");

  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t g = 0;
  KR_CHECK_STATUS(getGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

  // P: 2 granules, mapped read-write at rw and read-only at ro.
  const size_t p_bytes = 2 * g;
  CUmemGenericAllocationHandle p, q0h, q2h;
  KR_CHECK_STATUS(memCreate(&p, p_bytes, &prop, 0));
  CUdeviceptr rw = 0, ro = 0, q = 0;
  KR_CHECK_STATUS(addressReserve(&rw, p_bytes, 0, 0, 0));
  KR_CHECK_STATUS(addressReserve(&ro, p_bytes, 0, 0, 0));
  KR_CHECK_STATUS(memMap(rw, p_bytes, 0, p, 0));
  KR_CHECK_STATUS(memMap(ro, p_bytes, 0, p, 0));
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  KR_CHECK_STATUS(setAccess(rw, p_bytes, &access, 1));
  CUmemAccessDesc read_only = access;
  read_only.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  KR_CHECK_STATUS(setAccess(ro, p_bytes, &read_only, 1));

  // Q: a reservation of 3 granules; granules 0 and 2 mapped, granule 1 a hole.
  KR_CHECK_STATUS(memCreate(&q0h, g, &prop, 0));
  KR_CHECK_STATUS(memCreate(&q2h, g, &prop, 0));
  KR_CHECK_STATUS(addressReserve(&q, 3 * g, 0, 0, 0));
  KR_CHECK_STATUS(memMap(q, g, 0, q0h, 0));
  KR_CHECK_STATUS(memMap(q + 2 * g, g, 0, q2h, 0));
  KR_CHECK_STATUS(setAccess(q, g, &access, 1));
  KR_CHECK_STATUS(setAccess(q + 2 * g, g, &access, 1));

  const size_t n = p_bytes / sizeof(uint32_t);  // P as words
  const size_t nq = g / sizeof(uint32_t);        // a Q chunk as words (nq <= n)
  uint32_t* d_rw = reinterpret_cast<uint32_t*>(rw);
  uint32_t* d_ro = reinterpret_cast<uint32_t*>(ro);
  uint32_t* d_q0 = reinterpret_cast<uint32_t*>(q);
  uint32_t* d_q2 = reinterpret_cast<uint32_t*>(q + 2 * g);

  std::vector<uint32_t> ref_p = kr::random_u32(n, 0xfeed);
  std::vector<uint32_t> ref_q0 = kr::random_u32(nq, 0xbeef);
  std::vector<uint32_t> ref_q2 = kr::random_u32(nq, 0xcafe);
  KR_CHECK(cudaMemcpy(d_rw, ref_p.data(), p_bytes, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(d_q0, ref_q0.data(), g, cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(d_q2, ref_q2.data(), g, cudaMemcpyHostToDevice));

  constexpr unsigned threads = 256;
  for (uint32_t r = 0; r < 5; ++r) {
    write_rw<<<kr::blocks_for(n, threads), threads>>>(d_rw, n, 11u + r);
    KR_CHECK_LAUNCH();
    read_ro<<<kr::blocks_for(nq, threads), threads>>>(d_ro, d_q0, d_q2, nq);
    KR_CHECK_LAUNCH();
    for (auto& v : ref_p) v = v * 5u + 11u + r;
    for (size_t i = 0; i < nq; ++i) {
      ref_q0[i] += ref_p[i];
      ref_q2[i] ^= ref_p[nq - 1 - i] + ref_q0[i];
    }
  }
  KR_CHECK(cudaDeviceSynchronize());

  std::vector<uint32_t> out_rw(n), out_ro(n), out_q0(nq), out_q2(nq);
  KR_CHECK(cudaMemcpy(out_rw.data(), d_rw, p_bytes, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(out_ro.data(), d_ro, p_bytes, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(out_q0.data(), d_q0, g, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaMemcpy(out_q2.data(), d_q2, g, cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(out_rw, ref_p);
  KR_EXPECT(bad < 0, "P via rw [%lld] = %u, CPU %u", bad, out_rw[bad], ref_p[bad]);
  bad = kr::first_mismatch(out_ro, ref_p);
  KR_EXPECT(bad < 0, "P via ro [%lld] = %u, CPU %u", bad, out_ro[bad], ref_p[bad]);
  bad = kr::first_mismatch(out_q0, ref_q0);
  KR_EXPECT(bad < 0, "Q0[%lld] = %u, CPU %u", bad, out_q0[bad], ref_q0[bad]);
  bad = kr::first_mismatch(out_q2, ref_q2);
  KR_EXPECT(bad < 0, "Q2[%lld] = %u, CPU %u", bad, out_q2[bad], ref_q2[bad]);

  kr::Digest d;
  d.add(out_rw);
  d.add(out_q0);
  d.add(out_q2);

  KR_CHECK_STATUS(memUnmap(rw, p_bytes));
  KR_CHECK_STATUS(memUnmap(ro, p_bytes));
  KR_CHECK_STATUS(memUnmap(q, g));
  KR_CHECK_STATUS(memUnmap(q + 2 * g, g));
  KR_CHECK_STATUS(addressFree(rw, p_bytes));
  KR_CHECK_STATUS(addressFree(ro, p_bytes));
  KR_CHECK_STATUS(addressFree(q, 3 * g));
  KR_CHECK_STATUS(memRelease(p));
  KR_CHECK_STATUS(memRelease(q0h));
  KR_CHECK_STATUS(memRelease(q2h));
  d.print("vmm");
  return 0;
}
