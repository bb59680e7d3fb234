// cublas_gemm: pins replay of library kernels (cuBLAS's own lazily loaded modules, its workspace)
// that update memory in place: C = A·B + C (beta = 1) four times. A pass that is not undone adds
// A·B once more. FP32 math (no TF32), checked against a double-precision CPU product with a
// tolerance; the digest is over C's bytes, which cuBLAS produces bit-identically run to run.
#include "common.cuh"

#include <cublas_v2.h>

#include <cmath>

int main() {
  kr::require_gpu();
  constexpr int m = 192, n = 160, k = 224;  // column-major, lda = m, ldb = k, ldc = m
  constexpr int reps = 4;

  kr::Rng rng(0x6e6d);
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n),
      c(static_cast<size_t>(m) * n);
  for (auto& v : a) v = rng.signed_unit();
  for (auto& v : b) v = rng.signed_unit();
  for (auto& v : c) v = rng.signed_unit();

  float *da = nullptr, *db = nullptr, *dc = nullptr;
  KR_CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  KR_CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  KR_CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  KR_CHECK(cudaMemcpy(dc, c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t s;
  KR_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  KR_CHECK_STATUS(cublasCreate(&h));
  KR_CHECK_STATUS(cublasSetStream(h, s));
  KR_CHECK_STATUS(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));  // plain FP32, no TF32
  const float alpha = 1.0f, beta = 1.0f;
  for (int r = 0; r < reps; ++r) {
    KR_CHECK_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, m, db, k, &beta,
                                dc, m));
    KR_CHECK(cudaGetLastError());
  }
  std::vector<float> out(c.size());
  KR_CHECK(cudaMemcpyAsync(out.data(), dc, out.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  KR_CHECK(cudaStreamSynchronize(s));

  // CPU: C + reps * A·B in double; the GPU's float sums differ by rounding only.
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double dot = 0.0, mag = 0.0;
      for (int p = 0; p < k; ++p) {
        double t = static_cast<double>(a[i + static_cast<size_t>(p) * m]) * b[p + static_cast<size_t>(j) * k];
        dot += t;
        mag += std::fabs(t);
      }
      const size_t idx = i + static_cast<size_t>(j) * m;
      const double want = c[idx] + reps * dot;
      const double tol = 4e-5 * (std::fabs(c[idx]) + reps * mag) + 1e-6;
      KR_EXPECT(std::fabs(out[idx] - want) <= tol, "C(%d,%d) = %.9g, CPU %.9g (tol %.3g)", i, j,
                out[idx], want, tol);
    }
  }

  kr::Digest d;
  d.add(out);
  KR_CHECK_STATUS(cublasDestroy(h));
  KR_CHECK(cudaStreamDestroy(s));
  KR_CHECK(cudaFree(da));
  KR_CHECK(cudaFree(db));
  KR_CHECK(cudaFree(dc));
  d.print("cublas_gemm");
  return 0;
}
