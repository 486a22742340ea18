// A training checkpoint on disk: everything `poet train --resume` needs to continue as if
// it had never stopped - parameters (batch-norm running statistics included), optimizer
// state, the epochs done and the executor's step counter (Adam's bias correction and the
// dropout masks are keyed by it; the batch order is keyed by epoch and seed), and what the
// batches were made of (the batch size and the data), which a resumed run must use again.
//
// Layout (host byte order; the file is a resume point, not an exchange format):
//   "POETCKPT" | u32 version | u64 epochs_done | u64 steps_done | u64 seed |
//   u32 optimizer | u32 model name length | name | u64 batch_size |
//   u32 data length | data | u64 n | n f32 parameters | u64 m | m f32 optimizer state |
//   u32 CRC-32 of everything before it
// Version 1 had no batch_size and data; it is still read (they are then not checked).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poet::train {

struct TrainingCheckpoint {
  std::string model;  // what was trained, to refuse resuming another model
  std::uint64_t epochs_done = 0;
  std::uint64_t steps_done = 0;
  std::uint64_t seed = 0;
  std::uint32_t optimizer = 0;  // poet::Optimizer as a number
  std::uint64_t batch_size = 0;  // 0: not recorded (version 1)
  std::string data;              // the data trained on (data::identity); empty: not recorded
  float learning_rate = 0;       // the rate it was trained at; 0: not recorded (versions 1 and 2)
  std::vector<float> parameters;
  std::vector<float> optimizer_state;
};

std::string encode_checkpoint(const TrainingCheckpoint& c);

// Throws InputError naming `path` when the bytes are not a whole, intact checkpoint
// (wrong magic or version, truncated, checksum mismatch).
TrainingCheckpoint decode_checkpoint(const std::string& bytes, const std::string& path);

// Written through a temporary file and a rename: a crash leaves the previous checkpoint
// or the new one, never half of one. Throws IoError naming the path.
void save_checkpoint(const std::string& path, const TrainingCheckpoint& c);

// Throws InputError if `path` is missing or not an intact checkpoint; never changes it.
TrainingCheckpoint load_checkpoint(const std::string& path);

// A run that starts afresh (no --resume) may write its checkpoints to `path` only if
// nothing is there, or an empty file: else it would replace another run's checkpoint, which
// --resume continues, or a file that is none. Throws InputError saying which, and the fix
// (--resume only for a checkpoint of `model`, the one this run trains).
void check_free_for_a_new_checkpoint(const std::string& path, const std::string& model);

}  // namespace poet::train
