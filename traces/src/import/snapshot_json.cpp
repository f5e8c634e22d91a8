// pickle::DocumentFromJson (pickle_reader.hpp): a PyTorch memory snapshot saved with json.dump
// (`json.dump(torch.cuda.memory._snapshot(), f)`, a common alternative to _dump_snapshot's pickle)
// becomes the value tree the pickle reader builds, so the snapshot importer reads both alike.
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "pickle_reader.hpp"

namespace fragscope::traces::pickle {
namespace {

// Builds values in the document's arena as the SAX parser reports them: each value joins the
// container open at the time (a dict takes its key, then its value).
class Builder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Builder(std::vector<Value>& values) : values_(values) {}

  std::optional<ValueId> root;

  bool null() override { return Add(Value{}); }
  bool boolean(bool b) override {
    Value v;
    v.kind = Kind::kBool;
    v.boolean = b;
    return Add(std::move(v));
  }
  bool number_integer(number_integer_t n) override {
    Value v;
    v.kind = Kind::kInt;
    v.negative = n < 0;
    v.magnitude = n < 0 ? 0 - static_cast<std::uint64_t>(n) : static_cast<std::uint64_t>(n);
    return Add(std::move(v));
  }
  bool number_unsigned(number_unsigned_t n) override {
    Value v;
    v.kind = Kind::kInt;
    v.magnitude = n;
    return Add(std::move(v));
  }
  bool number_float(number_float_t x, const string_t&) override {
    Value v;
    v.kind = Kind::kFloat;
    v.real = x;
    return Add(std::move(v));
  }
  bool string(string_t& s) override {
    Value v;
    v.kind = Kind::kString;
    v.text = std::move(s);
    return Add(std::move(v));
  }
  bool binary(binary_t&) override { return Add(Value{}); }
  bool key(string_t& s) override { return string(s); }
  bool start_object(std::size_t) override { return Open(Kind::kDict); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Kind::kList); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    std::string what = e.what();
    if (const auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    throw PickleError(position == 0 ? 0 : position - 1, what);
  }

 private:
  bool Add(Value v) {
    const auto id = static_cast<ValueId>(values_.size());
    values_.push_back(std::move(v));
    if (open_.empty()) {
      if (!root) root = id;
    } else {
      values_[open_.back()].items.push_back(id);
    }
    return true;
  }
  bool Open(Kind kind) {
    Value v;
    v.kind = kind;
    const auto id = static_cast<ValueId>(values_.size());
    Add(std::move(v));
    open_.push_back(id);
    return true;
  }
  bool Close() {
    open_.pop_back();
    return true;
  }

  std::vector<Value>& values_;
  std::vector<ValueId> open_;
};

}  // namespace

Document DocumentFromJson(std::string_view text) {
  // ValueId is 32 bits: a value takes at least a byte of JSON, so 4 GiB of text is the most.
  if (text.size() >= (std::uint64_t{1} << 32)) {
    throw PickleError(0, fmt::format("{} bytes of JSON: more than a snapshot reader takes (4 GiB)", text.size()));
  }
  Document doc;
  Builder builder(doc.values_);
  nlohmann::json::sax_parse(text.begin(), text.end(), &builder);
  if (!builder.root) throw PickleError(0, "no JSON value");
  doc.root_ = *builder.root;
  return doc;
}

}  // namespace fragscope::traces::pickle
