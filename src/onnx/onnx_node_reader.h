// What the importer reads of one ONNX node: its attributes with their defaults, and the
// names it is known by in messages.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace poet::onnx_import {

class NodeReader {
 public:
  NodeReader(const ::onnx::NodeProto& node, int index) : node_(node), index_(index) {}

  const ::onnx::NodeProto& proto() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  // The node's name, or where it is when it has none: "#12 (Conv -> 'out')".
  std::string label() const;
  // Input i's name; empty when the node has no input i or leaves it out (an optional input).
  std::string input(int i) const;
  int input_count() const { return node_.input_size(); }

  const ::onnx::AttributeProto* find(const std::string& name) const;
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<std::int64_t>> get_ints(const std::string& name) const;

 private:
  const ::onnx::NodeProto& node_;
  int index_;
};

}  // namespace poet::onnx_import
