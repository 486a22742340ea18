#include "onnx_node_reader.h"

#include <fmt/format.h>

namespace poet::onnx_import {

std::string NodeReader::label() const {
  if (!node_.name().empty()) return node_.name();
  return fmt::format("#{} ({} -> '{}')", index_, node_.op_type(), node_.output_size() > 0 ? node_.output(0) : "");
}

std::string NodeReader::input(int i) const { return i < node_.input_size() ? node_.input(i) : std::string(); }

const ::onnx::AttributeProto* NodeReader::find(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t NodeReader::get_int(const std::string& name, std::int64_t fallback) const {
  const auto* a = find(name);
  return a ? a->i() : fallback;
}

float NodeReader::get_float(const std::string& name, float fallback) const {
  const auto* a = find(name);
  return a ? a->f() : fallback;
}

std::string NodeReader::get_string(const std::string& name, const std::string& fallback) const {
  const auto* a = find(name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<std::int64_t>> NodeReader::get_ints(const std::string& name) const {
  const auto* a = find(name);
  if (!a) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

}  // namespace poet::onnx_import
