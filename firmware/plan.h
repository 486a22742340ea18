/* The device plan (docs/DEVICE_FORMAT.md) read in place from flash: checked in full once
   (fw_plan_open), then walked instruction by instruction at every step (fw_plan_next). */
#ifndef FW_PLAN_H
#define FW_PLAN_H

#include <stdint.h>

#include "model_types.h"

enum fw_instr_kind { FW_COMPUTE = 0, FW_PAGE_OUT = 1, FW_PAGE_IN = 2, FW_FREE = 3 };

typedef struct {
  const uint8_t *bytes;
  uint32_t length;
  uint32_t node_count, count, alignment, arena_bytes;
  uint32_t instructions_at, offsets_at; /* byte positions of the two lists */
  uint32_t forward_end;                 /* instructions up to the loss's first compute */
} fw_plan;

typedef struct {
  uint32_t instr_at, offset_at, index;
} fw_plan_cursor;

typedef struct {
  uint32_t node;
  enum fw_instr_kind kind;
  uint32_t offset; /* bytes into the arena, for compute and page-in */
} fw_instr;

/* Checks the plan before anything runs it, against the model's nodes and an arena of
   `arena_capacity` bytes: magic, version, flags, CRC-32, the counts, every node id, every
   buffer inside the arena and aligned, and a replay of residency (a compute reads only
   resident tensors, page-in only what was paged out, free only what is resident, no two
   resident buffers share a byte, every node computed). Returns 0, or writes why into
   `error` (NUL-terminated, at most 120 bytes) and returns -1. `state` and `where` are
   the replay's scratch, `node_count` entries each. */
int fw_plan_open(fw_plan *plan, const uint8_t *bytes, uint32_t length, const fw_node *nodes, uint32_t node_count,
                 uint32_t arena_capacity, uint8_t *state, uint32_t *where, char *error);

void fw_plan_begin(const fw_plan *plan, fw_plan_cursor *cursor);
/* The next instruction; 0 at the end. Only for a plan fw_plan_open accepted. */
int fw_plan_next(const fw_plan *plan, fw_plan_cursor *cursor, fw_instr *out);

#endif
