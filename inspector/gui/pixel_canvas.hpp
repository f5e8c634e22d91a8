// A CPU-drawn RGBA image shown through one textured quad.
//
// Why: under a software OpenGL (Mesa llvmpipe, what Xvfb and many remote desktops give) each ImGui
// rectangle is two triangles, and setting one up costs about a microsecond whatever its size. A
// timeline of one-pixel columns (three series, their joins and envelopes, the in-use area, the
// stack's bands, markers, ticks) was 15 to 20 thousand triangles a frame: 20 ms of the frame at
// 1280x800. Filled here in memory (a few hundred thousand pixel writes) and uploaded once, it is
// two triangles. Pixels come out exactly as the colours given (the quad is drawn 1:1, nearest
// filtering, white tint); translucent fills are blended here as OpenGL would blend them. Fills are
// recorded and painted in Finish, only when they differ from the last image's.
#pragma once

#include <cstdint>
#include <vector>

#include <imgui.h>

namespace fragscope::gui {

class PixelCanvas {
 public:
  PixelCanvas() = default;
  PixelCanvas(const PixelCanvas&) = delete;
  PixelCanvas& operator=(const PixelCanvas&) = delete;
  ~PixelCanvas() { Release(); }
  // Frees the texture; the GL context must be current (App calls it before closing the window).
  void Release();

  // Starts an image covering screen pixels [x0, x0 + width) x [y0, y0 + height), cleared to
  // `background`, and adds its quad to `draw` now, so what `draw` gets later lies on top of it.
  // The quad shows what Finish uploads.
  void Begin(ImDrawList* draw, float x0, float y0, int width, int height, ImU32 background);
  // Fills [x0, x1) x [y0, y1) in screen coordinates, clipped to the image: a pixel is filled when
  // its centre is inside (OpenGL's rule). Alpha below 255 blends over what is there.
  void Fill(float x0, float y0, float x1, float y1, ImU32 colour);
  // Paints the fills into the image and uploads it, unless they are exactly those of the image
  // uploaded last (then nothing is done). Call once after the last Fill of the frame.
  void Finish();
  // Shows the last image again (nothing to fill or upload) when it was uploaded at this size; false
  // when there is none (then Begin it).
  bool Reuse(ImDrawList* draw, float x0, float y0, int width, int height);

 private:
  // A fill, clipped to the image, in image pixels: [x0, x1) x [y0, y1).
  struct Rect {
    int x0, y0, x1, y1;
    ImU32 colour;
    bool operator==(const Rect&) const = default;
  };
  void Paint(const Rect& fill);

  std::vector<Rect> fills_;           // this frame's, in order
  std::vector<Rect> uploaded_fills_;  // those of the image the texture holds
  ImU32 background_ = 0, uploaded_background_ = 0;
  std::vector<std::uint32_t> pixels_;  // RGBA (ImU32 layout), rows top first: painted in Finish
  int width_ = 0, height_ = 0;
  float x0_ = 0, y0_ = 0;
  unsigned texture_ = 0;
  int texture_width_ = 0, texture_height_ = 0;
};

}  // namespace fragscope::gui
