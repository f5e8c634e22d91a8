// cpu backend: convolution (im2col per image + GEMM) and pooling.
#include <algorithm>
#include <cstring>
#include <limits>

#include "cpu_backend.hpp"
#include "cpu_gemm.hpp"

namespace fragscope::trainer {
namespace {

// col[(c k k), (ho wo)] from one image x[c, h, w].
void Im2col(const ConvGeom& g, const float* x, float* col) {
  const int ho = g.ho(), wo = g.wo();
  for (int c = 0; c < g.cin; ++c) {
    for (int ky = 0; ky < g.k; ++ky) {
      for (int kx = 0; kx < g.k; ++kx) {
        float* row = col + (static_cast<long>(c * g.k + ky) * g.k + kx) * ho * wo;
        for (int oy = 0; oy < ho; ++oy) {
          const int iy = oy * g.stride - g.pad + ky;
          for (int ox = 0; ox < wo; ++ox) {
            const int ix = ox * g.stride - g.pad + kx;
            row[oy * wo + ox] = (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
                                    ? 0.0f
                                    : x[(static_cast<long>(c) * g.h + iy) * g.w + ix];
          }
        }
      }
    }
  }
}

// dx[c, h, w] += scatter of col.
void Col2im(const ConvGeom& g, const float* col, float* dx) {
  const int ho = g.ho(), wo = g.wo();
  for (int c = 0; c < g.cin; ++c) {
    for (int ky = 0; ky < g.k; ++ky) {
      for (int kx = 0; kx < g.k; ++kx) {
        const float* row = col + (static_cast<long>(c * g.k + ky) * g.k + kx) * ho * wo;
        for (int oy = 0; oy < ho; ++oy) {
          const int iy = oy * g.stride - g.pad + ky;
          if (iy < 0 || iy >= g.h) continue;
          for (int ox = 0; ox < wo; ++ox) {
            const int ix = ox * g.stride - g.pad + kx;
            if (ix < 0 || ix >= g.w) continue;
            dx[(static_cast<long>(c) * g.h + iy) * g.w + ix] += row[oy * wo + ox];
          }
        }
      }
    }
  }
}

// A 1x1, stride 1, unpadded convolution reads the image itself as its column matrix.
bool Pointwise(const ConvGeom& g) { return g.k == 1 && g.stride == 1 && g.pad == 0; }

// Image n as the GEMM's column matrix: the image itself for a 1x1 stride-1 convolution, else its
// im2col in the workspace.
const float* Columns(const ConvGeom& g, const float* image, float* workspace) {
  if (Pointwise(g)) return image;
  Im2col(g, image, workspace);
  return workspace;
}

}  // namespace

std::uint64_t Im2colWorkspaceBytes(const ConvGeom& g) {
  if (Pointwise(g)) return 0;
  return static_cast<std::uint64_t>(g.cin) * static_cast<std::uint64_t>(g.k * g.k) *
         static_cast<std::uint64_t>(g.ho() * g.wo()) * sizeof(float);
}

std::uint64_t CpuBackend::ConvWorkspaceBytes(const ConvGeom& g, ConvPass) {
  return Im2colWorkspaceBytes(g);
}

void CpuBackend::ConvForward(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& y,
                             const Tensor& ws) {
  const int hw = g.ho() * g.wo(), ckk = g.cin * g.k * g.k;
  const long in_size = static_cast<long>(g.cin) * g.h * g.w, out_size = static_cast<long>(g.cout) * hw;
  for (int n = 0; n < g.n; ++n) {
    const float* col = Columns(g, x.f() + n * in_size, ws.f());
    cpu::Gemm(false, false, g.cout, hw, ckk, 1.0f, w.f(), ckk, col, hw, 0.0f, y.f() + n * out_size, hw);
  }
}

void CpuBackend::ConvBackwardData(const ConvGeom& g, const Tensor& dy, const Tensor& w,
                                  const Tensor& dx, const Tensor& ws) {
  const int hw = g.ho() * g.wo(), ckk = g.cin * g.k * g.k;
  const long in_size = static_cast<long>(g.cin) * g.h * g.w, out_size = static_cast<long>(g.cout) * hw;
  for (int n = 0; n < g.n; ++n) {
    float* dxn = dx.f() + n * in_size;
    if (Pointwise(g)) {
      cpu::Gemm(true, false, ckk, hw, g.cout, 1.0f, w.f(), ckk, dy.f() + n * out_size, hw, 0.0f, dxn, hw);
      continue;
    }
    cpu::Gemm(true, false, ckk, hw, g.cout, 1.0f, w.f(), ckk, dy.f() + n * out_size, hw, 0.0f, ws.f(), hw);
    std::fill(dxn, dxn + in_size, 0.0f);
    Col2im(g, ws.f(), dxn);
  }
}

void CpuBackend::ConvBackwardFilter(const ConvGeom& g, const Tensor& x, const Tensor& dy,
                                    const Tensor& dw, const Tensor& ws) {
  const int hw = g.ho() * g.wo(), ckk = g.cin * g.k * g.k;
  const long in_size = static_cast<long>(g.cin) * g.h * g.w, out_size = static_cast<long>(g.cout) * hw;
  for (int n = 0; n < g.n; ++n) {
    const float* col = Columns(g, x.f() + n * in_size, ws.f());
    cpu::Gemm(false, true, g.cout, ckk, hw, 1.0f, dy.f() + n * out_size, hw, col, hw,
              n == 0 ? 0.0f : 1.0f, dw.f(), ckk);
  }
}

void CpuBackend::MaxPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) {
  const int ho = g.ho(), wo = g.wo();
  for (long p = 0; p < static_cast<long>(g.n) * g.c; ++p) {
    const float* xp = x.f() + p * g.h * g.w;
    float* yp = y.f() + p * ho * wo;
    for (int oy = 0; oy < ho; ++oy) {
      for (int ox = 0; ox < wo; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        for (int ky = 0; ky < g.k; ++ky) {
          const int iy = oy * g.stride - g.pad + ky;
          if (iy < 0 || iy >= g.h) continue;
          for (int kx = 0; kx < g.k; ++kx) {
            const int ix = ox * g.stride - g.pad + kx;
            if (ix >= 0 && ix < g.w) best = std::max(best, xp[iy * g.w + ix]);
          }
        }
        yp[oy * wo + ox] = best;
      }
    }
  }
}

void CpuBackend::MaxPoolBackward(const PoolGeom& g, const Tensor& x, const Tensor& y,
                                 const Tensor& dy, const Tensor& dx) {
  const int ho = g.ho(), wo = g.wo();
  std::fill(dx.f(), dx.f() + dx.count(), 0.0f);
  for (long p = 0; p < static_cast<long>(g.n) * g.c; ++p) {
    const float* xp = x.f() + p * g.h * g.w;
    float* dxp = dx.f() + p * g.h * g.w;
    for (int oy = 0; oy < ho; ++oy) {
      for (int ox = 0; ox < wo; ++ox) {
        const float best = y.f()[p * ho * wo + oy * wo + ox];
        bool routed = false;  // the gradient goes to the first maximum of the window
        for (int ky = 0; ky < g.k && !routed; ++ky) {
          const int iy = oy * g.stride - g.pad + ky;
          if (iy < 0 || iy >= g.h) continue;
          for (int kx = 0; kx < g.k; ++kx) {
            const int ix = ox * g.stride - g.pad + kx;
            if (ix >= 0 && ix < g.w && xp[iy * g.w + ix] == best) {
              dxp[iy * g.w + ix] += dy.f()[p * ho * wo + oy * wo + ox];
              routed = true;
              break;
            }
          }
        }
      }
    }
  }
}

namespace {
int WindowCount(const PoolGeom& g, int oy, int ox) {
  const int y0 = std::max(0, oy * g.stride - g.pad), y1 = std::min(g.h, oy * g.stride - g.pad + g.k);
  const int x0 = std::max(0, ox * g.stride - g.pad), x1 = std::min(g.w, ox * g.stride - g.pad + g.k);
  return std::max(1, (y1 - y0) * (x1 - x0));
}
}  // namespace

void CpuBackend::AvgPoolForward(const PoolGeom& g, const Tensor& x, const Tensor& y) {
  const int ho = g.ho(), wo = g.wo();
  for (long p = 0; p < static_cast<long>(g.n) * g.c; ++p) {
    const float* xp = x.f() + p * g.h * g.w;
    for (int oy = 0; oy < ho; ++oy) {
      for (int ox = 0; ox < wo; ++ox) {
        float sum = 0.0f;
        for (int iy = std::max(0, oy * g.stride - g.pad); iy < std::min(g.h, oy * g.stride - g.pad + g.k); ++iy) {
          for (int ix = std::max(0, ox * g.stride - g.pad); ix < std::min(g.w, ox * g.stride - g.pad + g.k); ++ix) {
            sum += xp[iy * g.w + ix];
          }
        }
        y.f()[p * ho * wo + oy * wo + ox] = sum / static_cast<float>(WindowCount(g, oy, ox));
      }
    }
  }
}

void CpuBackend::AvgPoolBackward(const PoolGeom& g, const Tensor& dy, const Tensor& dx) {
  const int ho = g.ho(), wo = g.wo();
  std::fill(dx.f(), dx.f() + dx.count(), 0.0f);
  for (long p = 0; p < static_cast<long>(g.n) * g.c; ++p) {
    float* dxp = dx.f() + p * g.h * g.w;
    for (int oy = 0; oy < ho; ++oy) {
      for (int ox = 0; ox < wo; ++ox) {
        const float share = dy.f()[p * ho * wo + oy * wo + ox] / static_cast<float>(WindowCount(g, oy, ox));
        for (int iy = std::max(0, oy * g.stride - g.pad); iy < std::min(g.h, oy * g.stride - g.pad + g.k); ++iy) {
          for (int ix = std::max(0, ox * g.stride - g.pad); ix < std::min(g.w, ox * g.stride - g.pad + g.k); ++ix) {
            dxp[iy * g.w + ix] += share;
          }
        }
      }
    }
  }
}

}  // namespace fragscope::trainer
