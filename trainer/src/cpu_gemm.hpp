// Row-major single-precision GEMM for the cpu backend: C = alpha op(A) op(B) + beta C.
#pragma once

namespace fragscope::trainer::cpu {

// op(A) is M x K, op(B) is K x N, C is M x N; lda/ldb/ldc are row strides of the stored matrices.
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace fragscope::trainer::cpu
