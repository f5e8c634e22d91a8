// The inspector's panels. One class per panel, each with a Draw(); state lives in members. They
// read the shared Document, talk through the Selection, and draw what the analysis library
// computed (LOD series, map layout, histogram, live rows). Each remembers where it drew its canvas,
// in framebuffer pixels, so the tests can check pixels against the model.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <imgui.h>

#include "document.hpp"
#include "pixel_canvas.hpp"
#include "fragscope/analysis/active_memory.hpp"
#include "fragscope/analysis/event_list.hpp"
#include "fragscope/analysis/live_groups.hpp"
#include "fragscope/analysis/recorded_limits.hpp"

namespace fragscope::gui {

// Sizes in the panels are given for the 13 px font the layout was made for; Px scales one to the
// font in use (`view --scale`, or the monitor's content scale), so a HiDPI screen gets a layout as
// large as its text.
inline float Px(float logical) { return std::round(logical * ImGui::GetFontSize() / 13.0f); }

// A legend's colour square on the current line, the next item beside it.
inline void Swatch(ImU32 colour) {
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float side = ImGui::GetTextLineHeight() - 2;
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(at.x, at.y + 4), ImVec2(at.x + side, at.y + 4 + side), colour);
  ImGui::Dummy(ImVec2(side, side));
  ImGui::SameLine();
}

struct PixelRect {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // [x0, x1) x [y0, y1); empty when not drawn
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};

// Colours (RGBA as ImU32), shared with the tests.
namespace colours {
inline constexpr ImU32 kBackground = IM_COL32(24, 24, 28, 255);
inline constexpr ImU32 kFree = IM_COL32(60, 220, 90, 255);
// A range a cut dump left out (not known to be free): neither free nor in use.
inline constexpr ImU32 kUnlisted = IM_COL32(120, 112, 128, 255);
inline constexpr ImU32 kUsed = IM_COL32(70, 110, 200, 255);
inline constexpr ImU32 kReserved = IM_COL32(240, 150, 40, 255);
inline constexpr ImU32 kInUse = IM_COL32(80, 140, 250, 255);
inline constexpr ImU32 kLoad = IM_COL32(235, 235, 235, 255);
inline constexpr ImU32 kOom = IM_COL32(240, 50, 50, 255);
inline constexpr ImU32 kStep = IM_COL32(120, 120, 130, 255);
inline constexpr ImU32 kCursor = IM_COL32(255, 230, 0, 255);
inline constexpr ImU32 kSelected = IM_COL32(255, 255, 255, 255);
inline constexpr ImU32 kRequest = IM_COL32(240, 50, 50, 255);
inline constexpr ImU32 kLimit = IM_COL32(210, 70, 210, 255);
inline constexpr ImU32 kGrid = IM_COL32(52, 52, 60, 255);
inline constexpr ImU32 kMarker = IM_COL32(80, 200, 215, 255);
inline constexpr ImU32 kFragmentation = IM_COL32(90, 220, 120, 255);  // its own 0..1 scale
inline constexpr ImU32 kRestBand = IM_COL32(88, 92, 104, 255);  // the active-memory stack's rest
// The active-memory stack's bands, in turn (neighbours differ in hue and brightness).
ImU32 Band(std::size_t index);
}  // namespace colours

// Memory over time: in use, reserved, LOAD; OOM and step markers; wheel zoom, drag pan, click to
// seek; a minimap of the whole trace under the plot.
class TimelinePanel {
 public:
  // Draws into the current window (the caller opened it). `height` 0: all that is left.
  void Draw(const Document& document, Selection& selection, float height = 0);
  PixelRect plot_rect() const { return plot_rect_; }
  // Value shown at the top of the plot (the y scale).
  std::uint64_t y_max() const { return y_max_; }
  // True when the last frame showed the evidence's moment(s) instead of a timeline (a state, a
  // message: there is no time to draw).
  bool drew_moment() const { return drew_moment_; }
  // The pixel row of the device's limit line in the last frame; -1 when none was drawn (no limit
  // recorded, or one far above the data).
  int limit_row() const { return limit_row_; }
  // Where the last frame shaded the events that only reconstruct what was live before recording
  // started (a PyTorch snapshot's start); empty when none are in view.
  PixelRect reconstructed_rect() const { return reconstructed_rect_; }
  // Every label the last frame wrote on the plot (the y values, the fragmentation scale, the
  // limit, the markers' names), each with its rectangle: none overlaps another.
  const std::vector<std::pair<std::string, PixelRect>>& plot_labels() const { return plot_labels_; }
  // What the last frame said in place of a timeline (a state's findings, title first).
  const std::vector<std::string>& moment_lines() const { return moment_lines_; }
  // The OOM lines the last frame drew: pixel columns, the selected device's OOMs only.
  const std::vector<int>& oom_columns() const { return oom_columns_; }
  // What the minimap draws: the reserved series, or in use where reserved is unknown (then its
  // note says so).
  const std::string& minimap_note() const { return minimap_note_; }
  // The markers and annotations the last frame drew (step markers are ticks, not here): the pixel
  // column of each line, and the names written at the top, each with its rectangle.
  const std::vector<int>& marker_columns() const { return marker_columns_; }
  const std::vector<std::string>& marker_labels() const { return marker_labels_; }
  const std::vector<PixelRect>& marker_label_rects() const { return marker_label_rects_; }
  // The last frame had too many markers in view to draw as lines: ticks along the top, unnamed.
  bool markers_dense() const { return markers_dense_; }
  // The names of the markers drawn within 3 px of x in the last frame (at most four per pixel
  // column, eight in all): what the tooltip lists.
  std::vector<std::string> MarkersNear(float x) const;
  bool show_in_use = true, show_reserved = true, show_load = true;
  // The active-memory timeline: live allocations stacked, the largest at the view's peak as bands
  // (analysis::StackActiveMemory), instead of the in-use curve.
  bool stacked = false;
  static constexpr std::size_t kBands = 16;
  // What the last frame stacked (empty unless `stacked`), and the band under the mouse (-1: the
  // rest, -2: none).
  const analysis::ActiveMemoryStack& active_stack() const { return stack_; }
  int hovered_band() const { return hovered_band_; }
  // The stack is computed off the UI thread (on 10 M events a view's stack takes tens of ms); until
  // it is ready for the view drawn, the in-use curve is drawn. Blocks until the computation running
  // now finished; the next frame then shows it (screenshots and tests).
  void WaitStack() { stack_job_.Wait(); }
  // External fragmentation over time (1 - largest hole / free), on its own scale: 0 at the plot's
  // bottom, 1 at its top. The model computes it on first use, in a job of this panel (or the
  // app's diagnosis) off the UI thread; until then nothing is drawn and the legend says so.
  bool show_fragmentation = false;
  void WaitFragmentation() { fragmentation_job_.Wait(); }
  // Whether the last frame drew it, and the per-column min and max it drew.
  bool fragmentation_drawn() const { return fragmentation_drawn_; }
  const std::vector<float>& fragmentation_min() const { return frag_min_; }
  const std::vector<float>& fragmentation_max() const { return frag_max_; }
  // Frees the plot's textures while the GL context is still current.
  void ReleaseGl() {
    plot_canvas_.Release();
    minimap_canvas_.Release();
  }
  ~TimelinePanel() {
    stack_job_.Wait();
    fragmentation_job_.Wait();
  }

 private:
  void Refresh(const Document& document, const Selection& selection, int width);
  // The stacked bands, one column per pixel; rectangles of equal rows in neighbouring columns merged.
  void RefreshStack(const Document& document, const Selection& selection, int width);
  void DrawStack(float x0, float y1, float plot_h, int width);
  // The tooltip lines of the band under the mouse (column c, byte height `bytes`).
  void BandTooltip(const Document& document, const Selection& selection, std::size_t column, std::uint64_t bytes);
  // A state's findings for the selected device, or a message's pointer to the OOM panel.
  void DrawMoment(const Document& document, const Selection& selection);
  // Markers and annotations in view: a line each (at most one per pixel column), named at the top
  // where the name fits beside the last one; the rest are named by the hover tooltip.
  void DrawMarkers(const Document& document, const Selection& selection, float x0, float y0, float y1, int width);
  // A label of `size` at the first of `candidates` (top left corners) that stays inside the plot
  // and clear of every label placed this frame; recorded in plot_labels_. Nothing when none is.
  std::optional<ImVec2> PlaceLabel(std::initializer_list<ImVec2> candidates, ImVec2 size, const char* text = nullptr);
  // The y values at quarters of the scale, the fragmentation scale and the limit, placed in turn.
  void DrawPlotLabels(float x0, float y0, float y1, float plot_h, int width);
  // The pixel row of `bytes` on a plot of height plot_h ending at row y1, under the y scale y_max_.
  float RowOf(std::uint64_t bytes, float y1, float plot_h) const {
    const double f = static_cast<double>(bytes) / static_cast<double>(y_max_);
    return static_cast<float>(std::round(static_cast<double>(y1) - f * plot_h));
  }
  std::vector<std::pair<std::string, PixelRect>> plot_labels_;
  std::vector<std::string> moment_lines_;
  std::vector<int> oom_columns_;
  std::string minimap_note_;
  PixelRect plot_rect_;
  PixelCanvas plot_canvas_, minimap_canvas_;
  std::vector<int> marker_columns_;
  std::vector<std::string> marker_labels_;
  std::vector<PixelRect> marker_label_rects_;
  bool markers_dense_ = false;
  std::vector<std::pair<float, std::string>> marker_hits_;  // x, name: every marker in view
  const Document* annotations_document_ = nullptr;
  std::vector<std::size_t> annotations_;  // indices of the markers drawn as lines (not steps)
  bool drew_moment_ = false;
  std::uint64_t limit_ = 0;  // the selected device's limit when the y scale includes it, else 0
  int limit_row_ = -1;
  PixelRect reconstructed_rect_;
  std::uint64_t y_max_ = 1;
  // LOD cache: valid for (document, device, view, width, axis).
  const Document* cached_document_ = nullptr;
  std::uint32_t cached_device_ = 0xffffffffu;
  double cached_begin_ = -1, cached_end_ = -1;
  int cached_width_ = -1;
  bool cached_time_axis_ = false;
  std::vector<std::uint64_t> min_[3], max_[3];
  // Fragmentation's columns for the cached view (valid once the model has it).
  void RefreshFragmentation(const Document& document, const Selection& selection);
  std::vector<float> frag_min_, frag_max_;
  bool frag_valid_ = false, fragmentation_drawn_ = false;
  bool hint_hidden_ = false;  // the legend line had no room for the mouse hint: the tooltip has it
  Job fragmentation_job_;
  // What a stack is computed for: the LOD cache's key.
  struct StackKey {
    const Document* document = nullptr;
    std::uint32_t device = 0xffffffffu;
    double begin = -1, end = -1;
    int width = -1;
    bool time_axis = false;
    bool operator==(const StackKey&) const = default;
  };
  analysis::ActiveMemoryStack stack_;
  bool stack_valid_ = false;               // stack_ matches the LOD cache's key
  Job stack_job_;
  StackKey stack_job_key_;                 // what the job computes (or computed)
  std::shared_ptr<analysis::ActiveMemoryStack> stack_job_result_;
  int hovered_band_ = -2;
  std::vector<std::uint64_t> bounds_;      // time axis: event index per column boundary
  std::vector<std::uint64_t> overview_;    // minimap: reserved max over the whole trace
  int overview_width_ = -1;
  bool overview_time_axis_ = false;
  std::uint32_t overview_device_ = 0xffffffffu;
  const Document* overview_document_ = nullptr;
  bool dragging_ = false;
  float drag_start_x_ = 0;
  double drag_view_begin_ = 0;
};

// The address space at the cursor: regions end to end, chunks coloured by state, tag or age, free
// holes always visible; hover for details, click to select.
class MemoryMapPanel {
 public:
  void Draw(const Document& document, Selection& selection, const analysis::MemoryState& state,
            std::uint64_t state_version, float height = 0);
  PixelRect canvas_rect() const { return canvas_rect_; }
  // Rows of the last frame, in pixels: kRowHeight and kRowGap at the 13 px font, scaled with it.
  int row_height() const { return row_height_; }
  int row_gap() const { return row_gap_; }
  int row_pitch() const { return row_height_ + row_gap_; }
  const analysis::MapLayout& layout() const { return layout_; }
  // The line above the map as last drawn (what it says of the moment).
  const std::string& header() const { return header_; }
  // The free event of the selected chunk, when found (shown with a "go to free" button).
  std::optional<std::uint64_t> selected_free_event() const { return free_event_; }
  // Where the last frame drew the "go to free" button (empty when none).
  PixelRect free_button() const { return free_button_; }
  void ReleaseGl() { canvas_.Release(); }  // while the GL context is current
  static constexpr int kRowHeight = 14;
  static constexpr int kRowGap = 4;

 private:
  ImU32 ColourOf(const Document& document, const Selection& selection, const analysis::MemoryState& state,
                 const analysis::MapItem& item) const;
  // The line above the map: the moment, its numbers, and what is unknown about it (with a legend
  // where a cut dump leaves ranges unlisted).
  void DrawHeader(const Document& document, const analysis::MemoryState& state, Document::FreeMemory free_memory);
  void DrawSelected(const Document& document, Selection& selection, const analysis::MemoryState& state,
                    std::uint64_t state_version);
  static constexpr std::uint64_t kFreeLookahead = 2000000;
  PixelRect canvas_rect_;
  PixelCanvas canvas_;
  struct CanvasKey {
    const Document* document = nullptr;
    std::uint64_t state_version = ~std::uint64_t{0};
    std::uint32_t cells = 0;
    int width = 0, rows = 0, row_height = 0, row_gap = 0;
    ColourMode colour = ColourMode::kState;
    std::optional<std::uint64_t> selected;
    bool operator==(const CanvasKey&) const = default;
  };
  CanvasKey canvas_key_;  // what canvas_ shows
  std::string header_;
  int row_height_ = kRowHeight, row_gap_ = kRowGap;
  analysis::MapLayout layout_;
  std::optional<std::uint64_t> free_event_;
  PixelRect free_button_;
  std::uint64_t free_searched_to_ = 0;
  std::uint64_t free_version_ = ~std::uint64_t{0};
  std::uint64_t free_address_ = 0;
  std::uint64_t layout_version_ = ~std::uint64_t{0};
  std::uint32_t layout_cells_ = 0;
};

// The live allocations at the cursor: sortable, filtered by tag, clipped.
class LiveTablePanel {
 public:
  void Draw(const Document& document, Selection& selection, const analysis::MemoryState& state,
            std::uint64_t state_version);
  std::size_t row_count() const { return rows_.size(); }
  // The columns of the last table drawn, by name.
  const std::vector<std::string>& columns() const { return columns_; }
  // Grouped: the live set by tag or by the user's frame, with totals (analysis::GroupLive).
  enum class Grouping : int { kNone, kTag, kFrame };
  void SetGrouping(Grouping grouping) { grouping_ = grouping; dirty_ = true; }
  const std::vector<analysis::LiveGroup>& groups() const { return groups_; }

 private:
  void DrawGroups();
  Grouping grouping_ = Grouping::kNone;
  std::vector<analysis::LiveGroup> groups_;
  std::uint64_t groups_in_use_ = 0;
  std::string filter_;
  std::string rows_filter_;
  analysis::LiveSortKey key_ = analysis::LiveSortKey::kSize;
  bool descending_ = true;
  std::uint64_t rows_version_ = ~std::uint64_t{0};
  bool dirty_ = true;
  std::vector<analysis::LiveRow> rows_;
  std::vector<std::string> columns_;
  bool requested_known_ = true;
};

// The selected device's events around the cursor, in words, with what each left in use and
// reserved (memory_viz's allocator state history): the cursor's row highlighted and scrolled to,
// a click on a row moves the cursor there.
class EventListPanel {
 public:
  void Draw(const Document& document, Selection& selection);
  const std::vector<analysis::EventRow>& rows() const { return rows_; }
  // The row of the cursor's event; -1 when it is another device's event (then the rows are the
  // selected device's on either side of it).
  int cursor_row() const { return cursor_row_; }
  // For a state: what the panel says instead of listing the events that lay the moment out.
  const std::string& state_note() const { return state_note_; }
  static constexpr std::size_t kAround = 200;  // events listed on each side of the cursor

 private:
  std::string state_note_;
  std::vector<analysis::EventRow> rows_;
  const Document* document_ = nullptr;
  std::uint32_t device_ = 0xffffffffu;
  std::uint64_t cursor_ = ~std::uint64_t{0};
  int cursor_row_ = -1;
  bool scroll_to_cursor_ = false;
};

// Free holes by size class (the allocator's bins) at the cursor.
class HistogramPanel {
 public:
  // `free_memory`: what the evidence tells of free memory (Document::FreeMemoryAt). Where it tells
  // nothing (no regions, a cut dump's unlisted ranges, an error message) there are no bins and the
  // numbers are unknown, never "0 B" or "no free holes".
  void Draw(const analysis::MemoryState& state, std::uint64_t state_version,
            Document::FreeMemory free_memory = Document::FreeMemory::kKnown);
  // The lines last drawn in the canvas (when no bars) and under it.
  const std::string& canvas_note() const { return canvas_note_; }
  const std::string& summary() const { return summary_; }
  PixelRect canvas_rect() const { return canvas_rect_; }
  const std::vector<analysis::SizeBucket>& buckets() const { return buckets_; }
  // Where the last frame wrote the bin labels (they never overlap).
  const std::vector<PixelRect>& label_rects() const { return label_rects_; }
  const std::vector<std::string>& label_texts() const { return label_texts_; }  // as drawn, in order

 private:
  PixelRect canvas_rect_;
  std::vector<PixelRect> label_rects_;
  std::vector<std::string> label_texts_;
  std::vector<analysis::SizeBucket> buckets_;
  std::uint64_t version_ = ~std::uint64_t{0};
  bool by_bytes_ = false;
  std::string canvas_note_, summary_;
};

// The OOM at (or next after) the cursor in plain words, the request drawn against the largest
// holes, the suggestion and the minimal limit.
class OomPanel {
 public:
  void Draw(const Document& document, Selection& selection);
  PixelRect bars_rect() const { return bars_rect_; }
  std::size_t shown_oom() const { return shown_; }  // index into the device's OOMs; SIZE_MAX: none
  std::size_t messages_drawn() const { return messages_drawn_; }  // error messages explained last frame
  std::size_t stack_frames() const { return stack_frames_; }  // frames of the failed request shown
  // What the last frame said where no hole was drawn beside the request (empty when holes were).
  const std::string& holes_note() const { return holes_note_; }

 private:
  // An error message has numbers, no events: each message's diagnosis, as `fragscope report` says it.
  void DrawMessages(const Document& document);

  PixelRect bars_rect_;
  std::size_t messages_drawn_ = 0;
  std::size_t stack_frames_ = 0;
  std::size_t shown_ = static_cast<std::size_t>(-1);
  std::string holes_note_;
};

// The trace replayed under two configurations, side by side, with the table of `fragscope compare`.
class ComparePanel {
 public:
  ComparePanel();
  void SetConfs(const std::string& a, const std::string& b);
  void Draw(const Document& document, Selection& selection);
  void Start(const Document& document);  // runs both replays in the background
  bool running() const { return job_.running(); }
  void Wait() { job_.Wait(); }
  bool has_result() const { return result_ready_; }
  // What a side's replay met and was called (its configuration, and the recorded limit when it
  // was applied), and why no replay ran; for tests.
  std::uint64_t side_ooms(int side) const;
  // The devices a side's replay ran.
  std::vector<std::uint32_t> side_devices(int side) const;
  // A side's configuration as the table names it on `device`, with the recorded limit it was given.
  std::string side_label(int side, std::uint32_t device = 0) const { return sides_[side].Label(device); }
  // The limit a side's replay ran `device` under, when it was the recorded one (carried).
  std::optional<std::uint64_t> side_recorded_limit(int side, std::uint32_t device) const {
    return sides_[side].limits.LimitOf(device);
  }
  const std::string& error() const { return error_; }
  // The devices the replays left out (another framework's host memory), with their backing.
  const std::map<std::uint32_t, std::string>& left_out_devices() const { return left_out_; }
  // The overhead column as last drawn ("as recorded" first, then side A and B): "1.04", "0.39*".
  const std::vector<std::string>& overhead_texts() const { return overhead_texts_; }

 private:
  struct Side {
    std::string conf;                 // as given ("default policy" for a blank one)
    analysis::RecordedLimits limits;  // the recorded limits it was given, if any
    std::string Label(std::uint32_t device) const { return conf + limits.Note(device); }
    analysis::ReplayTimeline run;   // its model moves into `document`
    Document document;
    TimelinePanel timeline;
    MemoryMapPanel map;
    CursorState state;
    Selection selection;
  };
  std::string conf_text_[2];
  Side sides_[2];
  bool result_ready_ = false;
  std::string error_;
  Job job_;
  // Results of the job, moved into sides_ on the UI thread once it finished.
  analysis::ReplayTimeline pending_[2];
  std::string pending_base_[2];
  analysis::RecordedLimits pending_limits_[2];
  // The trace's own peak LOAD per device (the sequence's, as `fragscope compare` measures every row
  // against): written by the job with pending_, shown once ready.
  std::map<std::uint32_t, std::uint64_t> pending_load_, sequence_load_;
  // The devices left out of the replays (traces::TraceHeader::ForeignHostDevices) and their backing:
  // written by the job with pending_, shown once ready.
  std::map<std::uint32_t, std::string> pending_left_out_, left_out_;
  std::vector<std::string> overhead_texts_;  // the overhead column as last drawn, row by row
  bool pending_ready_ = false;
  const Document* results_of_ = nullptr;  // the document the replays are of
};

// The reader's and the model's warnings (a truncated file, skipped events, lines an importer could
// not take): a badge with the count in the top bar, and the list in a window of its own on click.
// A damaged input never opens looking whole. warnings_panel.cpp.
class WarningsPanel {
 public:
  // The badge, on the current line of the current window; nothing when there are no warnings.
  void DrawBadge(const Document& document);
  // The list (clipped), in its own window while open.
  void Draw(const Document& document);
  bool open() const { return open_; }
  void set_open(bool open) { open_ = open; }
  // For tests: where the badge was last drawn (empty when it was not), and the rows of the last
  // list drawn.
  ImVec2 badge_min() const { return badge_min_; }
  ImVec2 badge_max() const { return badge_max_; }
  std::size_t rows_drawn() const { return rows_drawn_; }

 private:
  bool open_ = false;
  ImVec2 badge_min_{0, 0}, badge_max_{0, 0};
  std::size_t rows_drawn_ = 0;
};

// Top bar: open a trace (path box, recent files), device, colour, axis, cursor position, progress.
class ToolbarPanel {
 public:
  // The first line (path, open, recent, device, colouring, axis). Returns a path to open, or empty.
  std::string Draw(const Document* document, Selection& selection, const std::vector<std::string>& recent,
                   const Job& loader);
  // The status line's text: the file (full path in a tooltip), the cursor, the keys. Drawn after the
  // line's buttons, so a long path never pushes them out of the window.
  void DrawStatus(const Document& document, const Selection& selection);
  void DrawError(const std::string& load_error);
  // The status line's text as last drawn (the file, what it holds, the cursor), without the keys.
  const std::string& status() const { return status_; }

 private:
  std::string path_;
  std::string status_;
};

}  // namespace fragscope::gui
