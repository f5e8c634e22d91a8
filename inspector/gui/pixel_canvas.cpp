#include "pixel_canvas.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <GL/gl.h>

namespace fragscope::gui {
namespace {

// The first pixel whose centre is at or after coordinate v (v is finite; clamped far outside any
// image, so that the conversion to int is always defined).
int FirstCentre(float v) { return static_cast<int>(std::ceil(std::clamp(v, -1e7f, 1e7f) - 0.5f)); }

std::uint32_t Blend(std::uint32_t dst, ImU32 src) {
  const std::uint32_t a = (src >> IM_COL32_A_SHIFT) & 0xff;
  std::uint32_t out = 0xffu << IM_COL32_A_SHIFT;
  for (const unsigned shift : {IM_COL32_R_SHIFT, IM_COL32_G_SHIFT, IM_COL32_B_SHIFT}) {
    const std::uint32_t s = (src >> shift) & 0xff, d = (dst >> shift) & 0xff;
    out |= ((s * a + d * (255 - a) + 127) / 255) << shift;
  }
  return out;
}

// The image is opaque (an opaque background, translucent fills blended on the CPU), so it is drawn
// without blending: under llvmpipe a blended pixel also reads the framebuffer, and these images
// are most of the window's pixels. The backend's own state comes back after it.
void AddOpaqueImage(ImDrawList* draw, unsigned texture, ImVec2 min, ImVec2 max) {
  draw->AddCallback([](const ImDrawList*, const ImDrawCmd*) { glDisable(GL_BLEND); }, nullptr);
  draw->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::intptr_t>(texture)), min, max);
  draw->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

}  // namespace

void PixelCanvas::Release() {
  if (texture_ != 0) {
    const GLuint texture = texture_;
    glDeleteTextures(1, &texture);
  }
  texture_ = 0;
  texture_width_ = texture_height_ = 0;
  uploaded_fills_.clear();
}

void PixelCanvas::Begin(ImDrawList* draw, float x0, float y0, int width, int height, ImU32 background) {
  width_ = std::max(1, width);
  height_ = std::max(1, height);
  x0_ = x0;
  y0_ = y0;
  background_ = background | (0xffu << IM_COL32_A_SHIFT);
  fills_.clear();
  if (texture_ == 0) {
    GLuint texture = 0;
    glGenTextures(1, &texture);
    texture_ = texture;
    glBindTexture(GL_TEXTURE_2D, texture_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  }
  AddOpaqueImage(draw, texture_, ImVec2(x0, y0),
                 ImVec2(x0 + static_cast<float>(width_), y0 + static_cast<float>(height_)));
}

void PixelCanvas::Fill(float x0, float y0, float x1, float y1, ImU32 colour) {
  if (!(x0 < x1) || !(y0 < y1)) return;  // empty, or NaN
  if (!std::isfinite(x0) || !std::isfinite(x1) || !std::isfinite(y0) || !std::isfinite(y1)) {
    x0 = std::isfinite(x0) ? x0 : -1e7f, y0 = std::isfinite(y0) ? y0 : -1e7f;  // -inf
    x1 = std::isfinite(x1) ? x1 : 1e7f, y1 = std::isfinite(y1) ? y1 : 1e7f;    // +inf
  }
  const int ix0 = std::max(0, FirstCentre(x0 - x0_)), ix1 = std::min(width_, FirstCentre(x1 - x0_));
  const int iy0 = std::max(0, FirstCentre(y0 - y0_)), iy1 = std::min(height_, FirstCentre(y1 - y0_));
  if (ix1 <= ix0 || iy1 <= iy0) return;
  if (((colour >> IM_COL32_A_SHIFT) & 0xff) == 0) return;
  fills_.push_back({ix0, iy0, ix1, iy1, colour});
}

void PixelCanvas::Paint(const Rect& fill) {
  const std::uint32_t alpha = (fill.colour >> IM_COL32_A_SHIFT) & 0xff;
  const auto stride = static_cast<std::size_t>(width_);
  std::uint32_t* row = pixels_.data() + static_cast<std::size_t>(fill.y0) * stride;
  const int rows = fill.y1 - fill.y0;
  if (alpha == 255) {
    if (fill.x1 - fill.x0 == 1) {  // a plot column: one pixel a row
      for (int y = 0; y < rows; ++y, row += stride) row[fill.x0] = fill.colour;
      return;
    }
    for (int y = 0; y < rows; ++y, row += stride) std::fill(row + fill.x0, row + fill.x1, fill.colour);
    return;
  }
  // What is under a translucent fill is mostly one colour (the background, a band): blend each
  // distinct colour once, across rows as well (a plot's columns are one pixel wide).
  std::uint32_t last_dst = row[fill.x0], last_out = Blend(last_dst, fill.colour);
  for (int y = 0; y < rows; ++y, row += stride) {
    for (int x = fill.x0; x < fill.x1; ++x) {
      if (row[x] != last_dst) {
        last_dst = row[x];
        last_out = Blend(last_dst, fill.colour);
      }
      row[x] = last_out;
    }
  }
}

bool PixelCanvas::Reuse(ImDrawList* draw, float x0, float y0, int width, int height) {
  if (texture_ == 0 || width != texture_width_ || height != texture_height_ || width != width_ || height != height_) {
    return false;
  }
  x0_ = x0;
  y0_ = y0;
  AddOpaqueImage(draw, texture_, ImVec2(x0, y0),
                 ImVec2(x0 + static_cast<float>(width), y0 + static_cast<float>(height)));
  return true;
}

void PixelCanvas::Finish() {
  if (texture_ == 0) return;
  // The same fills on the same background at the same size as the image uploaded last (the plot
  // while only the cursor moves, the minimap while the view stays): nothing to paint or send. A
  // frame's fills are a few thousand rectangles, the image a few hundred thousand pixels, and an
  // upload a copy into llvmpipe's tiled layout, a few ms for a large panel.
  if (texture_width_ == width_ && texture_height_ == height_ && uploaded_background_ == background_ &&
      uploaded_fills_ == fills_) {
    return;
  }
  pixels_.assign(static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_), background_);
  for (const Rect& fill : fills_) Paint(fill);
  uploaded_fills_.swap(fills_);
  uploaded_background_ = background_;
  glBindTexture(GL_TEXTURE_2D, texture_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  // ImU32 is R in the low byte: in memory R, G, B, A, as GL_RGBA / GL_UNSIGNED_BYTE reads it.
  if (texture_width_ != width_ || texture_height_ != height_) {
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, width_, height_, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
    texture_width_ = width_;
    texture_height_ = height_;
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
  }
}

}  // namespace fragscope::gui
