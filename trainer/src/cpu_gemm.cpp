#include "cpu_gemm.hpp"

#include <algorithm>

namespace fragscope::trainer::cpu {
namespace {

constexpr int kBlockK = 128;
constexpr int kBlockN = 512;

// C[i, j] += alpha sum_k A(i, k) B[k, j], B rows contiguous: the inner loop runs along j and
// vectorizes; blocks of k and j keep B in cache, and four rows of C share each load of B.
void GemmRowsOfB(bool trans_a, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float* c, int ldc) {
  auto at = [&](int i, int kk) {
    return alpha * (trans_a ? a[static_cast<long>(kk) * lda + i] : a[static_cast<long>(i) * lda + kk]);
  };
  for (int j0 = 0; j0 < n; j0 += kBlockN) {
    const int j1 = std::min(n, j0 + kBlockN);
    for (int k0 = 0; k0 < k; k0 += kBlockK) {
      const int k1 = std::min(k, k0 + kBlockK);
      int i = 0;
      for (; i + 4 <= m; i += 4) {
        float* c0 = c + static_cast<long>(i) * ldc;
        float* c1 = c0 + ldc;
        float* c2 = c1 + ldc;
        float* c3 = c2 + ldc;
        for (int kk = k0; kk < k1; ++kk) {
          const float a0 = at(i, kk), a1 = at(i + 1, kk), a2 = at(i + 2, kk), a3 = at(i + 3, kk);
          const float* brow = b + static_cast<long>(kk) * ldb;
          for (int j = j0; j < j1; ++j) {
            const float bv = brow[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
          }
        }
      }
      for (; i < m; ++i) {
        float* crow = c + static_cast<long>(i) * ldc;
        for (int kk = k0; kk < k1; ++kk) {
          const float av = at(i, kk);
          const float* brow = b + static_cast<long>(kk) * ldb;
          for (int j = j0; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    float* crow = c + static_cast<long>(i) * ldc;
    if (beta == 0.0f) {
      std::fill(crow, crow + n, 0.0f);
    } else if (beta != 1.0f) {
      for (int j = 0; j < n; ++j) crow[j] *= beta;
    }
  }
  if (!trans_b) {
    GemmRowsOfB(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
    return;
  }
  // B is stored N x K: each C entry is a dot product of two contiguous rows, summed in eight
  // lanes so that it vectorizes without reassociating flags (and without a scratch buffer outside
  // the allocator).
  for (int i = 0; i < m; ++i) {
    const float* arow = trans_a ? nullptr : a + static_cast<long>(i) * lda;
    float* crow = c + static_cast<long>(i) * ldc;
    for (int j = 0; j < n; ++j) {
      const float* brow = b + static_cast<long>(j) * ldb;
      float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int kk = 0;
      if (arow != nullptr) {
        for (; kk + 8 <= k; kk += 8) {
          for (int l = 0; l < 8; ++l) lanes[l] += arow[kk + l] * brow[kk + l];
        }
        for (; kk < k; ++kk) lanes[0] += arow[kk] * brow[kk];
      } else {
        for (; kk < k; ++kk) lanes[0] += a[static_cast<long>(kk) * lda + i] * brow[kk];
      }
      float sum = 0.0f;
      for (float lane : lanes) sum += lane;
      crow[j] += alpha * sum;
    }
  }
}

}  // namespace fragscope::trainer::cpu
