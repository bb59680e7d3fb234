// Compiled to a cubin at build time; module_symbols_test reads its symbol table.
__device__ unsigned int launch_counter;
__device__ float table[256] = {1.0f};
__managed__ int managed_value;
__constant__ float coefficients[16];

extern "C" __global__ void plain_kernel(float* x) { x[threadIdx.x] += coefficients[0]; }

template <typename T>
__global__ void templated_kernel(T* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * T(2) + table[i % 256];
  if (i == 0) atomicAdd(&launch_counter, 1u);
  if (i == 0) managed_value += 1;
}
template __global__ void templated_kernel<float>(float*, int);
template __global__ void templated_kernel<double>(double*, int);

// printf goes through vprintf, not the device heap: this module does not use the heap.
extern "C" __global__ void printf_kernel(const float* x) { printf("%f\n", x[0]); }
