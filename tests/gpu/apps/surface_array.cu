// surface_array: pins what kreplay does with memory it cannot restore. A kernel updates a
// surface-writable CUDA array in place (surf2Dread + surf2Dwrite); arrays are not linear device
// memory, so kreplay cannot save them, and replaying such a launch would apply the update several
// times. While the array exists, launches must be declined (UNTRACKED_MEMORY) and run once; before
// it is created and after it is freed, launches on plain device memory are replayed as usual.
//
// Phases: 6 in-place updates of a device buffer; create the array, 6 in-place updates of the
// array; free it; 6 more updates of the buffer. Results are checked against the CPU.
#include "common.cuh"

#include <cmath>

__global__ void update_buffer(float* x, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = __fmaf_rn(x[i], 1.0001f, 1.0f);
}

__global__ void update_surface(cudaSurfaceObject_t s, int width, int height) {
  int xi = blockIdx.x * blockDim.x + threadIdx.x;
  int yi = blockIdx.y * blockDim.y + threadIdx.y;
  if (xi >= width || yi >= height) return;
  float v;
  surf2Dread(&v, s, xi * static_cast<int>(sizeof(float)), yi);
  surf2Dwrite(__fmaf_rn(v, 1.5f, 1.0f), s, xi * static_cast<int>(sizeof(float)), yi);
}

int main() {
  kr::require_gpu();
  constexpr size_t n = 1 << 18;
  constexpr int width = 256, height = 128, launches = 6;
  constexpr unsigned threads = 256;

  std::vector<float> host = kr::random_unit(n, 0x7007);
  std::vector<float> ref = host;
  float* x = nullptr;
  KR_CHECK(cudaMalloc(&x, n * sizeof(float)));
  KR_CHECK(cudaMemcpy(x, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  auto buffer_phase = [&] {
    for (int l = 0; l < launches; ++l) {
      update_buffer<<<kr::blocks_for(n, threads), threads>>>(x, n);
      KR_CHECK_LAUNCH();
      for (auto& v : ref) v = std::fmaf(v, 1.0001f, 1.0f);
    }
    KR_CHECK(cudaDeviceSynchronize());
  };
  buffer_phase();

  std::vector<float> image = kr::random_unit(static_cast<size_t>(width) * height, 0x5005);
  std::vector<float> image_ref = image;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  KR_CHECK(cudaMallocArray(&array, &desc, width, height, cudaArraySurfaceLoadStore));
  KR_CHECK(cudaMemcpy2DToArray(array, 0, 0, image.data(), width * sizeof(float),
                               width * sizeof(float), height, cudaMemcpyHostToDevice));
  cudaResourceDesc rd{};
  rd.resType = cudaResourceTypeArray;
  rd.res.array.array = array;
  cudaSurfaceObject_t surface = 0;
  KR_CHECK(cudaCreateSurfaceObject(&surface, &rd));
  dim3 block(16, 16), grid((width + 15) / 16, (height + 15) / 16);
  for (int l = 0; l < launches; ++l) {
    update_surface<<<grid, block>>>(surface, width, height);
    KR_CHECK_LAUNCH();
    for (auto& v : image_ref) v = std::fmaf(v, 1.5f, 1.0f);
  }
  KR_CHECK(cudaDeviceSynchronize());
  KR_CHECK(cudaMemcpy2DFromArray(image.data(), width * sizeof(float), array, 0, 0,
                                 width * sizeof(float), height, cudaMemcpyDeviceToHost));
  KR_CHECK(cudaDestroySurfaceObject(surface));
  KR_CHECK(cudaFreeArray(array));

  buffer_phase();

  std::vector<float> out(n);
  KR_CHECK(cudaMemcpy(out.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  long long bad = kr::first_mismatch(image, image_ref);
  KR_EXPECT(bad < 0, "array[%lld] = %a, CPU %a", bad, image[bad], image_ref[bad]);
  bad = kr::first_mismatch(out, ref);
  KR_EXPECT(bad < 0, "x[%lld] = %a, CPU %a", bad, out[bad], ref[bad]);

  kr::Digest d;
  d.add(out);
  d.add(image);
  KR_CHECK(cudaFree(x));
  d.print("surface_array");
  return 0;
}
