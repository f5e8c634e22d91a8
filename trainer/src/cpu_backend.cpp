// cpu backend: element-wise ops, batch normalization, linear, loss, optimizer.
#include "cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_gemm.hpp"

namespace fragscope::trainer {

void CpuBackend::Upload(const Tensor& dst, const void* src, std::uint64_t bytes) {
  std::memcpy(dst.data(), src, bytes);
}

void CpuBackend::Download(const Tensor& src, void* dst, std::uint64_t bytes) {
  std::memcpy(dst, src.data(), bytes);
}

void CpuBackend::Fill(const Tensor& t, float value) { std::fill(t.f(), t.f() + t.count(), value); }

void CpuBackend::BatchNormForward(const Shape& s, const Tensor& x, const Tensor& gamma,
                                  const Tensor& beta, const Tensor& running_mean,
                                  const Tensor& running_var, const Tensor& y,
                                  const Tensor& save_mean, const Tensor& save_invstd,
                                  double momentum, double eps) {
  const long hw = static_cast<long>(s.h) * s.w;
  const double m = static_cast<double>(s.n) * static_cast<double>(hw);
  for (int c = 0; c < s.c; ++c) {
    double sum = 0.0, sq = 0.0;
    for (int n = 0; n < s.n; ++n) {
      const float* p = x.f() + (static_cast<long>(n) * s.c + c) * hw;
      for (long i = 0; i < hw; ++i) sum += p[i];
    }
    const double mean = sum / m;
    for (int n = 0; n < s.n; ++n) {
      const float* p = x.f() + (static_cast<long>(n) * s.c + c) * hw;
      for (long i = 0; i < hw; ++i) sq += (p[i] - mean) * (p[i] - mean);
    }
    const double var = sq / m;
    const double invstd = 1.0 / std::sqrt(var + eps);
    save_mean.f()[c] = static_cast<float>(mean);
    save_invstd.f()[c] = static_cast<float>(invstd);
    const double unbiased = m > 1 ? sq / (m - 1) : var;
    running_mean.f()[c] = static_cast<float>((1 - momentum) * running_mean.f()[c] + momentum * mean);
    running_var.f()[c] = static_cast<float>((1 - momentum) * running_var.f()[c] + momentum * unbiased);
    const auto scale = static_cast<float>(gamma.f()[c] * invstd);
    const auto shift = static_cast<float>(beta.f()[c] - mean * gamma.f()[c] * invstd);
    for (int n = 0; n < s.n; ++n) {
      const float* p = x.f() + (static_cast<long>(n) * s.c + c) * hw;
      float* q = y.f() + (static_cast<long>(n) * s.c + c) * hw;
      for (long i = 0; i < hw; ++i) q[i] = p[i] * scale + shift;
    }
  }
}

void CpuBackend::BatchNormBackward(const Shape& s, const Tensor& x, const Tensor& dy,
                                   const Tensor& gamma, const Tensor& save_mean,
                                   const Tensor& save_invstd, const Tensor& dx,
                                   const Tensor& dgamma, const Tensor& dbeta, double) {
  const long hw = static_cast<long>(s.h) * s.w;
  const double m = static_cast<double>(s.n) * static_cast<double>(hw);
  for (int c = 0; c < s.c; ++c) {
    const double mean = save_mean.f()[c], invstd = save_invstd.f()[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int n = 0; n < s.n; ++n) {
      const long off = (static_cast<long>(n) * s.c + c) * hw;
      for (long i = 0; i < hw; ++i) {
        sum_dy += dy.f()[off + i];
        sum_dy_xhat += dy.f()[off + i] * (x.f()[off + i] - mean) * invstd;
      }
    }
    dgamma.f()[c] = static_cast<float>(sum_dy_xhat);
    dbeta.f()[c] = static_cast<float>(sum_dy);
    const double k = gamma.f()[c] * invstd / m;
    for (int n = 0; n < s.n; ++n) {
      const long off = (static_cast<long>(n) * s.c + c) * hw;
      for (long i = 0; i < hw; ++i) {
        const double xhat = (x.f()[off + i] - mean) * invstd;
        dx.f()[off + i] = static_cast<float>(k * (m * dy.f()[off + i] - sum_dy - xhat * sum_dy_xhat));
      }
    }
  }
}

void CpuBackend::ReluForward(const Tensor& x, const Tensor& y) {
  const float* a = x.f();
  float* b = y.f();
  for (long i = 0; i < x.count(); ++i) b[i] = a[i] > 0.0f ? a[i] : 0.0f;
}

void CpuBackend::ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  for (long i = 0; i < y.count(); ++i) dx.f()[i] = y.f()[i] > 0.0f ? dy.f()[i] : 0.0f;
}

void CpuBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out) {
  for (long i = 0; i < out.count(); ++i) out.f()[i] = a.f()[i] + b.f()[i];
}

void CpuBackend::LinearForward(int n, int in, int out, const Tensor& x, const Tensor& w,
                               const Tensor& b, const Tensor& y) {
  for (int r = 0; r < n; ++r) std::copy(b.f(), b.f() + out, y.f() + static_cast<long>(r) * out);
  cpu::Gemm(false, true, n, out, in, 1.0f, x.f(), in, w.f(), in, 1.0f, y.f(), out);
}

void CpuBackend::LinearBackward(int n, int in, int out, const Tensor& x, const Tensor& w,
                                const Tensor& dy, const Tensor& dx, const Tensor& dw,
                                const Tensor& db) {
  if (dx.defined()) cpu::Gemm(false, false, n, in, out, 1.0f, dy.f(), out, w.f(), in, 0.0f, dx.f(), in);
  cpu::Gemm(true, false, out, in, n, 1.0f, dy.f(), out, x.f(), in, 0.0f, dw.f(), in);
  for (int o = 0; o < out; ++o) {
    float sum = 0.0f;
    for (int r = 0; r < n; ++r) sum += dy.f()[static_cast<long>(r) * out + o];
    db.f()[o] = sum;
  }
}

void CpuBackend::SoftmaxCrossEntropy(int n, int k, const Tensor& logits, const Tensor& labels,
                                     const Tensor& dlogits, const Tensor& result) {
  double loss = 0.0;
  int correct = 0;
  for (int r = 0; r < n; ++r) {
    const float* z = logits.f() + static_cast<long>(r) * k;
    float* d = dlogits.f() + static_cast<long>(r) * k;
    const int label = labels.i32()[r];
    const float zmax = *std::max_element(z, z + k);
    const int argmax = static_cast<int>(std::max_element(z, z + k) - z);
    double sum = 0.0;
    for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(z[j] - zmax));
    loss += std::log(sum) - (z[label] - zmax);
    for (int j = 0; j < k; ++j) {
      const double p = std::exp(static_cast<double>(z[j] - zmax)) / sum;
      d[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) / n);
    }
    correct += argmax == label ? 1 : 0;
  }
  result.f()[0] = static_cast<float>(loss / n);
  result.f()[1] = static_cast<float>(correct);
}

void CpuBackend::SgdStep(const Tensor& w, const Tensor& g, const Tensor& v, double lr,
                         double momentum, double weight_decay) {
  const auto mu = static_cast<float>(momentum), wd = static_cast<float>(weight_decay),
             rate = static_cast<float>(lr);
  for (long i = 0; i < w.count(); ++i) {
    v.f()[i] = mu * v.f()[i] + g.f()[i] + wd * w.f()[i];
    w.f()[i] -= rate * v.f()[i];
  }
}

void CpuBackend::AverageAcrossDevices(const std::vector<Tensor>& replicas) {
  if (replicas.size() < 2) return;
  const float scale = 1.0f / static_cast<float>(replicas.size());
  const long count = replicas[0].count();
  for (long i = 0; i < count; ++i) {
    float sum = 0.0f;
    for (const Tensor& t : replicas) sum += t.f()[i];
    for (const Tensor& t : replicas) t.f()[i] = sum * scale;
  }
}

}  // namespace fragscope::trainer
