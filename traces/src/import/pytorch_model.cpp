#include "pytorch_model.hpp"

#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace fragscope::traces::pytorch_import {
namespace {

using pickle::Document;
using pickle::Kind;
using pickle::Value;

// `at`: the offending value, whose byte offset the error names.
[[noreturn]] void Malformed(const std::string& where, const std::string& what, const Value& at) {
  throw MalformedSnapshot(at.offset == Value::kNoOffset ? std::nullopt : std::optional<std::uint64_t>(at.offset),
                          fmt::format("not a readable PyTorch memory snapshot: {}: {}", where, what));
}

// A non-negative integer field that must fit in 64 bits; `fallback` when absent or None.
std::uint64_t U64(const Document& doc, const Value& dict, const char* key, const std::string& where,
                  std::uint64_t fallback = 0) {
  const Value* v = doc.Get(dict, key);
  if (v == nullptr || v->kind == Kind::kNone) return fallback;
  if (v->kind != Kind::kInt) {
    Malformed(where, fmt::format("'{}' is a {}, not an int", key, pickle::KindName(v->kind)), *v);
  }
  if (v->big) Malformed(where, fmt::format("'{}' does not fit in 64 bits", key), *v);
  if (v->negative) Malformed(where, fmt::format("'{}' is negative", key), *v);
  return v->magnitude;
}

// Stream handles and similar: any int, negative ones wrap (they only identify).
std::uint64_t Handle(const Document& doc, const Value& dict, const char* key) {
  const Value* v = doc.Get(dict, key);
  if (v == nullptr || v->kind != Kind::kInt || v->big) return 0;
  return v->negative ? 0 - v->magnitude : v->magnitude;
}

std::uint32_t DeviceIndex(const Document& doc, const Value& dict, const std::string& where,
                          std::uint32_t fallback) {
  const Value* v = doc.Get(dict, "device");
  if (v == nullptr || v->kind == Kind::kNone) return fallback;
  const auto index = pickle::AsU64(*v);
  if (!index || *index > 0xffff) Malformed(where, "'device' is no device index", *v);
  return static_cast<std::uint32_t>(*index);
}

std::string Text(const Document& doc, const Value& dict, const char* key) {
  const Value* v = doc.Get(dict, key);
  return v != nullptr && v->kind == Kind::kString ? v->text : std::string();
}

Action ParseAction(const std::string& name) {
  if (name == "alloc") return Action::kAlloc;
  if (name == "free_requested") return Action::kFreeRequested;
  if (name == "free_completed") return Action::kFreeCompleted;
  if (name == "segment_alloc") return Action::kSegmentAlloc;
  if (name == "segment_free") return Action::kSegmentFree;
  if (name == "segment_map") return Action::kSegmentMap;
  if (name == "segment_unmap") return Action::kSegmentUnmap;
  if (name == "snapshot") return Action::kSnapshot;
  if (name == "oom") return Action::kOom;
  return Action::kOther;
}

SourceSegment ExtractSegment(const Document& doc, const Value& seg, std::size_t index,
                             bool* history_format, std::vector<std::string>* warnings) {
  const std::string where = fmt::format("segment {}", index);
  if (seg.kind != Kind::kDict) Malformed(where, "not a dict", seg);
  SourceSegment out;
  out.device = DeviceIndex(doc, seg, where, 0);
  out.address = U64(doc, seg, "address", where);
  out.total_size = U64(doc, seg, "total_size", where);
  out.allocated_size = U64(doc, seg, "allocated_size", where);
  out.requested_size = U64(doc, seg, "requested_size", where);
  out.stream = Handle(doc, seg, "stream");
  const Value* expandable = doc.Get(seg, "is_expandable");
  out.expandable = expandable != nullptr && expandable->kind == Kind::kBool && expandable->boolean;
  if (out.address > std::numeric_limits<std::uint64_t>::max() - out.total_size) {
    Malformed(where, "address + total_size overflows 64 bits", seg);
  }
  std::uint64_t next = out.address;  // torch 2.0: blocks tile the segment in order
  const Value* blocks = doc.Get(seg, "blocks");
  std::size_t b = 0;
  for (pickle::ValueId id : blocks ? doc.Items(*blocks) : std::span<const pickle::ValueId>{}) {
    const Value& block = doc.at(id);
    const std::string bwhere = fmt::format("segment {} block {}", index, b++);
    if (block.kind != Kind::kDict) Malformed(bwhere, "not a dict", block);
    SourceBlock sb;
    sb.size = U64(doc, block, "size", bwhere);
    sb.requested = U64(doc, block, "requested_size", bwhere, sb.size);
    const std::string state = Text(doc, block, "state");
    sb.live = state == "active_allocated" || state == "active_pending_free";
    sb.frames = doc.Get(block, "frames");
    const Value* history = doc.Get(block, "history");
    if (doc.Get(block, "address") != nullptr) {
      sb.address = U64(doc, block, "address", bwhere);
    } else {
      *history_format = true;
      sb.address = next;
      const auto entries = history ? doc.Items(*history) : std::span<const pickle::ValueId>{};
      if (!entries.empty()) {
        const Value& last = doc.at(entries.back());  // the most recent allocation of the block
        if (last.kind == Kind::kDict) {
          const std::uint64_t addr = U64(doc, last, "addr", bwhere, sb.address);
          if (addr != sb.address) {
            warnings->push_back(fmt::format(
                "{}: history says address {:#x}, the sizes of the blocks before say {:#x}; "
                "using the latter",
                bwhere, addr, sb.address));
          }
          if (sb.frames == nullptr) sb.frames = doc.Get(last, "frames");
        }
      }
    }
    if (sb.address > std::numeric_limits<std::uint64_t>::max() - sb.size) {
      Malformed(bwhere, "address + size overflows 64 bits", block);
    }
    next = sb.address + sb.size;
    out.blocks.push_back(sb);
  }
  return out;
}

SourceEvent ExtractEvent(const Document& doc, const Value& event, std::uint32_t device,
                         std::size_t index) {
  const std::string where = fmt::format("device {} trace event {}", device, index);
  if (event.kind != Kind::kDict) Malformed(where, "not a dict", event);
  SourceEvent out;
  out.device = device;
  out.action_name = Text(doc, event, "action");
  out.action = ParseAction(out.action_name);
  out.addr = U64(doc, event, "addr", where);
  out.size = U64(doc, event, "size", where);
  out.stream = Handle(doc, event, "stream");
  out.device_free = U64(doc, event, "device_free", where);
  if (out.action == Action::kOom && doc.Get(event, "device_free") == nullptr) {
    out.device_free = out.addr;  // older files: device_free in place of addr
  }
  if (const Value* t = doc.Get(event, "time_us"); t != nullptr && t->kind != Kind::kNone) {
    out.time_us = U64(doc, event, "time_us", where);
  }
  if (out.action != Action::kOom && out.addr > std::numeric_limits<std::uint64_t>::max() - out.size) {
    Malformed(where, "addr + size overflows 64 bits", event);
  }
  out.frames = doc.Get(event, "frames");
  return out;
}

}  // namespace

SourceSnapshot ExtractSnapshot(const Document& doc, std::vector<std::string>* warnings) {
  const Value& root = doc.root();
  if (root.kind != Kind::kDict) {
    Malformed("top level", fmt::format("a {}, not a dict", pickle::KindName(root.kind)), root);
  }
  const Value* segments = doc.Get(root, "segments");
  const Value* traces = doc.Get(root, "device_traces");
  if (segments == nullptr && traces == nullptr) {
    Malformed("top level", "neither 'segments' nor 'device_traces'", root);
  }
  SourceSnapshot out;
  if (segments != nullptr) {
    if (segments->kind != Kind::kList) Malformed("top level", "'segments' is no list", *segments);
    std::size_t i = 0;
    for (pickle::ValueId id : doc.Items(*segments)) {
      out.segments.push_back(
          ExtractSegment(doc, doc.at(id), i++, &out.block_history_format, warnings));
    }
  }
  if (traces != nullptr) {
    if (traces->kind != Kind::kList) Malformed("top level", "'device_traces' is no list", *traces);
    const auto devices = doc.Items(*traces);
    if (devices.size() > 0x10000) Malformed("top level", "too many devices in 'device_traces'", *traces);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      auto& events = out.device_traces.emplace_back();
      const Value& list = doc.at(devices[d]);
      if (list.kind == Kind::kNone) continue;
      if (list.kind != Kind::kList) Malformed(fmt::format("device trace {}", d), "not a list", list);
      std::size_t i = 0;
      for (pickle::ValueId id : doc.Items(list)) {
        events.push_back(ExtractEvent(doc, doc.at(id), static_cast<std::uint32_t>(d), i++));
      }
    }
  }
  if (const Value* settings = doc.Get(root, "allocator_settings");
      settings != nullptr && settings->kind == Kind::kDict) {
    for (std::size_t i = 0; i + 1 < settings->items.size(); i += 2) {
      out.settings.emplace_back(
          pickle::ToDisplayString(doc, doc.at(settings->items[i]), 1),
          pickle::ToDisplayString(doc, doc.at(settings->items[i + 1])));
    }
  }
  if (const Value* notes = doc.Get(root, "external_annotations"); notes != nullptr) {
    std::size_t i = 0;
    for (pickle::ValueId id : doc.Items(*notes)) {
      const Value& note = doc.at(id);
      const std::string where = fmt::format("external annotation {}", i++);
      if (note.kind != Kind::kDict) {
        warnings->push_back(where + ": not a dict; skipped");
        continue;
      }
      Annotation a;
      a.device = DeviceIndex(doc, note, where, 0);
      if (const Value* t = doc.Get(note, "time_us"); t != nullptr && t->kind != Kind::kNone) {
        a.time_us = U64(doc, note, "time_us", where);
      }
      const std::string stage = Text(doc, note, "stage");
      const std::string name = Text(doc, note, "name");
      a.name = "annotation: " + (name.empty() && stage.empty()
                                     ? pickle::ToDisplayString(doc, note, 2)
                                     : (stage.empty() ? name : stage + " " + name));
      out.annotations.push_back(std::move(a));
    }
  }
  return out;
}

}  // namespace fragscope::traces::pytorch_import
