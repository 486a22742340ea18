#include "plan.h"

#include "libc.h"

enum { RESIDENT = 1, STORED = 2, COMPUTED = 4 }; /* flags of a node in the replay */

static uint32_t crc32(const uint8_t *p, uint32_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  while (n--) {
    crc ^= *p++;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

/* An unsigned LEB128 number of at most 32 bits at *at; -1 past `end` or if too large. */
static int varint(const uint8_t *bytes, uint32_t end, uint32_t *at, uint32_t *value) {
  uint32_t v = 0;
  for (uint32_t shift = 0; shift < 35; shift += 7) {
    if (*at >= end) return -1;
    const uint8_t b = bytes[(*at)++];
    if (shift == 28 && (b & 0x70u)) return -1;
    v |= (uint32_t)(b & 0x7Fu) << shift;
    if (!(b & 0x80u)) {
      *value = v;
      return 0;
    }
  }
  return -1;
}

/* Appends text and a number to an error message. */
static int fail(char *error, const char *what, uint32_t number, const char *after) {
  char digits[11];
  int n = 0;
  do {
    digits[n++] = (char)('0' + number % 10u);
    number /= 10u;
  } while (number);
  uint32_t at = 0;
  for (const char *s = what; *s && at < 80; ++s) error[at++] = *s;
  while (n) error[at++] = digits[--n];
  for (const char *s = after; *s && at < 119; ++s) error[at++] = *s;
  error[at] = '\0';
  return -1;
}

/* Whether node n's kernel may write its output over input u's bytes: a ReLU and a ReLU's
   gradient go element by element over their first input (x, dY), as poet's in-place rule
   (op_table.h's in_place_input) says. */
static int computes_in_place(const fw_node *nodes, const fw_node *n, uint32_t u) {
  const int relu = n->op == FW_OP_RELU || (n->op == FW_OP_GRAD_INPUT && nodes[n->grad_of].op == FW_OP_RELU);
  return relu && n->input_count > 0 && (uint32_t)n->inputs[0] == u && nodes[u].bytes == n->bytes;
}

void fw_plan_begin(const fw_plan *plan, fw_plan_cursor *cursor) {
  cursor->instr_at = plan->instructions_at;
  cursor->offset_at = plan->offsets_at;
  cursor->index = 0;
}

int fw_plan_next(const fw_plan *plan, fw_plan_cursor *cursor, fw_instr *out) {
  if (cursor->index >= plan->count) return 0;
  uint32_t word = 0, offset = 0;
  varint(plan->bytes, plan->length, &cursor->instr_at, &word);
  out->node = word >> 2;
  out->kind = (enum fw_instr_kind)(word & 3u);
  out->offset = 0;
  if (out->kind == FW_COMPUTE || out->kind == FW_PAGE_IN) {
    varint(plan->bytes, plan->length, &cursor->offset_at, &offset);
    out->offset = offset * plan->alignment;
  }
  ++cursor->index;
  return 1;
}

int fw_plan_open(fw_plan *plan, const uint8_t *bytes, uint32_t length, const fw_node *nodes, uint32_t node_count,
                 uint32_t arena_capacity, uint8_t *state, uint32_t *where, char *error) {
  if (length < 10) return fail(error, "the plan has ", length, " bytes, too few for a poet device plan");
  if (bytes[0] != 'P' || bytes[1] != 'O' || bytes[2] != 'E' || bytes[3] != 'T')
    return fail(error, "not a poet device plan (no \"POET\" magic); byte 0 is ", bytes[0], "");
  if (bytes[4] != 1) return fail(error, "plan version ", bytes[4], "; this firmware reads version 1");
  if (bytes[5] != 0) return fail(error, "plan flags ", bytes[5], "; this firmware knows none");
  const uint32_t end = length - 4;
  const uint32_t stored = (uint32_t)bytes[end] | (uint32_t)bytes[end + 1] << 8 | (uint32_t)bytes[end + 2] << 16 |
                          (uint32_t)bytes[end + 3] << 24;
  if (crc32(bytes, end) != stored) return fail(error, "plan checksum mismatch (stored ", stored, "): corrupted");
  uint32_t at = 6;
  plan->bytes = bytes;
  plan->length = end;
  if (varint(bytes, end, &at, &plan->node_count) || varint(bytes, end, &at, &plan->count) ||
      varint(bytes, end, &at, &plan->alignment) || varint(bytes, end, &at, &plan->arena_bytes))
    return fail(error, "plan header truncated at byte ", at, "");
  if (plan->node_count != node_count)
    return fail(error, "the plan is for a graph of ", plan->node_count,
                " nodes, not this model's; rebuild with the plan and model header made together");
  if (plan->alignment == 0 || plan->alignment % 4u) return fail(error, "plan alignment ", plan->alignment, " is not a multiple of 4");
  if (plan->arena_bytes > arena_capacity)
    return fail(error, "the plan needs an arena of ", plan->arena_bytes, " bytes, more than the firmware's");
  if (plan->count > end - at) return fail(error, "the plan claims ", plan->count, " instructions, more than its bytes");
  plan->instructions_at = at;
  for (uint32_t i = 0; i < plan->count; ++i) {
    uint32_t word;
    if (varint(bytes, end, &at, &word)) return fail(error, "plan truncated in instruction ", i, "");
    if ((word >> 2) >= node_count) return fail(error, "plan instruction ", i, " names a node past the graph");
  }
  plan->offsets_at = at;

  /* The replay: each node's flags, and where its buffer is while resident. */
  memset(state, 0, node_count);
  plan->forward_end = 0;
  fw_plan_cursor c = {plan->instructions_at, plan->offsets_at, 0};
  int32_t taken = -1; /* a tensor whose bytes a compute took in place: freed next, before any compute */
  for (uint32_t i = 0; i < plan->count; ++i) {
    uint32_t word, offset = 0;
    varint(bytes, end, &c.instr_at, &word);
    const uint32_t v = word >> 2, kind = word & 3u;
    const fw_node *n = &nodes[v];
    if (taken >= 0 && kind == FW_COMPUTE)
      return fail(error, "plan instruction ", i, " comes before the free of a tensor computed over in place");
    if (taken >= 0 && v == (uint32_t)taken) {
      if (kind != FW_FREE) return fail(error, "plan instruction ", i, " moves a tensor computed over in place");
      taken = -1;
    }
    if (kind == FW_COMPUTE || kind == FW_PAGE_IN) {
      if (varint(bytes, end, &c.offset_at, &offset)) return fail(error, "plan offsets end early, at instruction ", i, "");
      if (offset > arena_capacity / plan->alignment || offset * plan->alignment + n->bytes > plan->arena_bytes)
        return fail(error, "plan instruction ", i, " puts a buffer past the arena's end");
      offset *= plan->alignment;
      if (state[v] & RESIDENT) return fail(error, "plan instruction ", i, " makes a buffer of a tensor already in RAM");
      for (uint32_t u = 0; u < node_count; ++u)
        if ((state[u] & RESIDENT) && n->bytes && nodes[u].bytes && offset < where[u] + nodes[u].bytes &&
            where[u] < offset + n->bytes) {
          if (kind == FW_COMPUTE && taken < 0 && offset == where[u] && computes_in_place(nodes, n, u)) {
            taken = (int32_t)u;
            continue;
          }
          return fail(error, "plan instruction ", i, " puts a buffer on the bytes of another live one");
        }
    }
    switch (kind) {
      case FW_COMPUTE:
        for (uint32_t k = 0; k < n->input_count; ++k)
          if (!(state[n->inputs[k]] & RESIDENT)) return fail(error, "plan instruction ", i, " computes from a tensor not in RAM");
        state[v] |= RESIDENT | COMPUTED; /* a recomputation gives the stored copy's bits again */
        where[v] = offset;
        if (n->role == FW_LOSS && plan->forward_end == 0) plan->forward_end = i + 1;
        break;
      case FW_PAGE_OUT:
        if (!(state[v] & RESIDENT)) return fail(error, "plan instruction ", i, " pages out a tensor not in RAM");
        state[v] |= STORED;
        break;
      case FW_PAGE_IN:
        if (!(state[v] & STORED)) return fail(error, "plan instruction ", i, " pages in a tensor never paged out");
        state[v] |= RESIDENT;
        where[v] = offset;
        break;
      default:
        if (!(state[v] & RESIDENT)) return fail(error, "plan instruction ", i, " frees a tensor not in RAM");
        state[v] &= (uint8_t)~RESIDENT;
        break;
    }
  }
  if (taken >= 0) return fail(error, "the plan never frees node ", (uint32_t)taken, ", which a compute took in place");
  if (c.offset_at != end) return fail(error, "the plan has ", end - c.offset_at, " unexpected bytes after its offsets");
  for (uint32_t v = 0; v < node_count; ++v)
    if (!(state[v] & COMPUTED)) return fail(error, "the plan never computes node ", v, "");
  if (plan->forward_end == 0) return fail(error, "the plan never computes the loss (node count ", node_count, ")");
  return 0;
}
