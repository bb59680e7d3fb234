// Compiled to a cubin at build time; module_symbols_test checks that device malloc, free, new and
// delete mark the module as a user of the device-side heap.
struct Shape {
  __device__ virtual float area() const { return 0.0f; }
  __device__ virtual ~Shape() {}
};

extern "C" __global__ void make_shape(Shape** out) { *out = new Shape(); }
extern "C" __global__ void drop_shape(Shape** in) { delete *in; }
extern "C" __global__ void scratch(float* x) {
  float* tmp = static_cast<float*>(malloc(16 * sizeof(float)));
  tmp[0] = x[0];
  x[1] = tmp[0];
  free(tmp);
}
