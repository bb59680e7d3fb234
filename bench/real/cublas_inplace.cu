// cublas_inplace: a cuBLAS sequence that updates one matrix in place, as a solver's inner loop
// does. Every round, on a non-blocking stream:
//   C = A·B + C          cublasSgemm, beta = 1 (C is read and written)
//   C = C + alpha·D      cublasSaxpy over C's m·n elements
//   C = 0.5·C            cublasSscal
// A pass that is not undone applies an update twice. FP32 math (CUBLAS_PEDANTIC_MATH: no TF32),
// checked against a double-precision host recurrence with a tolerance; the digest is over C's
// bytes, which cuBLAS produces bit-identically run to run on one GPU.
//   cublas_inplace [rounds=12]     three cuBLAS calls per round: about 36 launches by default
#include "real_common.cuh"

#include <cublas_v2.h>

#include <cmath>

int main(int argc, char** argv) {
  real::begin("cublas_inplace");
  const int rounds = real::count_arg(argc, argv, 12);
  constexpr int m = 384, n = 256, k = 320;  // column-major, lda = m, ldb = k, ldc = m
  constexpr size_t mn = static_cast<size_t>(m) * n;
  const float alpha = 0.25f, one = 1.0f, half = 0.5f;

  real::Rng rng(0x62c1);
  std::vector<float> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n), c(mn), d(mn);
  for (auto* v : {&a, &b, &c, &d}) {
    for (auto& x : *v) x = rng.signed_unit();
  }

  float *da = nullptr, *db = nullptr, *dc = nullptr, *dd = nullptr;
  CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  CHECK(cudaMalloc(&dc, mn * sizeof(float)));
  CHECK(cudaMalloc(&dd, mn * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), mn * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dd, d.data(), mn * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK_STATUS(cublasCreate(&h));
  CHECK_STATUS(cublasSetStream(h, s));
  CHECK_STATUS(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  for (int r = 0; r < rounds; ++r) {
    CHECK_STATUS(
        cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da, m, db, k, &one, dc, m));
    CHECK_STATUS(cublasSaxpy(h, static_cast<int>(mn), &alpha, dd, 1, dc, 1));
    CHECK_STATUS(cublasSscal(h, static_cast<int>(mn), &half, dc, 1));
  }
  std::vector<float> out(mn);
  CHECK(cudaMemcpyAsync(out.data(), dc, mn * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));

  // Host: P = A·B once in double, then c = 0.5 (c + P + alpha d) per round. The GPU's float
  // sums differ by rounding only; the recurrence halves earlier rounds' errors.
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double p = 0.0, mag = 0.0;
      for (int q = 0; q < k; ++q) {
        double t = static_cast<double>(a[i + static_cast<size_t>(q) * m]) *
                   b[q + static_cast<size_t>(j) * k];
        p += t;
        mag += std::fabs(t);
      }
      const size_t idx = i + static_cast<size_t>(j) * m;
      double want = c[idx];
      for (int r = 0; r < rounds; ++r)
        want = 0.5 * (want + p + alpha * static_cast<double>(d[idx]));
      const double tol = 3e-5 * (std::fabs(c[idx]) + mag + std::fabs(d[idx])) + 1e-6;
      if (!(std::fabs(out[idx] - want) <= tol)) {
        real::fail("C(%d,%d) = %.9g, host %.9g (tol %.3g)", i, j, out[idx], want, tol);
      }
    }
  }

  real::Digest dig;
  dig.add(out);
  CHECK_STATUS(cublasDestroy(h));
  CHECK(cudaStreamDestroy(s));
  for (float* p : {da, db, dc, dd}) CHECK(cudaFree(p));
  dig.pass();
  return 0;
}
