#include "runtime.h"

#include "device_plan.h" /* poet plan --c-header: poet_plan[], poet_plan_len */
#include "kernels.h"
#include "libc.h"
#include "model.h" /* poet firmware --header: fw_nodes, fw_slices, FW_PARAMS_INIT */
#include "plan.h"

/* What a step touches in SRAM: parameters (initialised from flash at reset), gradients,
   the arena. SGD keeps no optimizer state. */
static float params[FW_PARAM_COUNT] = FW_PARAMS_INIT;
static float grads[FW_TRAINED_COUNT];
static uint8_t arena[FW_ARENA_BYTES] __attribute__((aligned(16)));
static int32_t labels[FW_BATCH];
static uint32_t where[FW_NODE_COUNT];      /* a resident node's offset in the arena */
static uint32_t first_block[FW_NODE_COUNT]; /* a node's slot on storage */
static uint8_t bounce[BSP_BLOCK_BYTES];     /* a buffer's last, partial block */
static fw_plan plan;
static fw_stats stats;

static float *tensor(int32_t node) { return (float *)(arena + where[node]); }
static uint8_t *bytes_of(int32_t node) { return arena + where[node]; } /* a mask or indices */
static uint32_t elements(int32_t node) { return fw_nodes[node].bytes / sizeof(float); } /* of an fp32 tensor */

static void set_error(char *error, const char *what) {
  uint32_t i = 0;
  for (; what[i] && i < 119; ++i) error[i] = what[i];
  error[i] = '\0';
}

int fw_runtime_init(char *error) {
  static uint8_t state[FW_NODE_COUNT];
  if (fw_plan_open(&plan, poet_plan, poet_plan_len, fw_nodes, FW_NODE_COUNT, sizeof arena, state, where, error))
    return -1;
  uint32_t block = 0;
  for (uint32_t v = 0; v < FW_NODE_COUNT; ++v) {
    first_block[v] = block;
    block += (fw_nodes[v].bytes + BSP_BLOCK_BYTES - 1) / BSP_BLOCK_BYTES;
  }
  stats.arena_bytes = plan.arena_bytes;
  stats.arena_capacity = sizeof arena;
  stats.instructions = plan.count;
  stats.batch = FW_BATCH;
  stats.parameters = FW_PARAM_COUNT;
  stats.model = FW_MODEL_NAME;
  return 0;
}

const fw_stats *fw_runtime_stats(void) { return &stats; }

const float *fw_parameters(uint32_t *count) {
  *count = FW_PARAM_COUNT;
  return params;
}

/* Whole blocks straight from or to the buffer; the tail through the bounce block, so that
   no byte past the buffer is read or written. */
static int page_out(uint32_t v) {
  const uint32_t bytes = fw_nodes[v].bytes, whole = bytes / BSP_BLOCK_BYTES, tail = bytes % BSP_BLOCK_BYTES;
  const uint8_t *from = arena + where[v];
  const uint32_t blocks = whole + (tail ? 1u : 0u);
  if (bsp_storage_erase(first_block[v], blocks)) return -1;
  if (whole && bsp_storage_write(first_block[v], from, whole)) return -1;
  if (tail) {
    memset(bounce, 0, sizeof bounce);
    memcpy(bounce, from + whole * BSP_BLOCK_BYTES, tail);
    if (bsp_storage_write(first_block[v] + whole, bounce, 1)) return -1;
  }
  stats.paged_out_bytes += bytes;
  return 0;
}

static int page_in(uint32_t v) {
  const uint32_t bytes = fw_nodes[v].bytes, whole = bytes / BSP_BLOCK_BYTES, tail = bytes % BSP_BLOCK_BYTES;
  uint8_t *to = arena + where[v];
  if (whole && bsp_storage_read(first_block[v], to, whole)) return -1;
  if (tail) {
    if (bsp_storage_read(first_block[v] + whole, bounce, 1)) return -1;
    memcpy(to + whole * BSP_BLOCK_BYTES, bounce, tail);
  }
  stats.paged_in_bytes += bytes;
  return 0;
}

/* The input node: the batch's records (a label byte, then the pixel bytes) from the data
   stream, each pixel p becoming p / 255 - mean as on the host. The bytes are read into
   the top quarter of the sample's floats and widened in place from the front: float i
   overwrites only bytes already read. */
static int read_batch(const fw_batch *b, float *out) {
  const uint32_t record = FW_SAMPLE_VALUES + 1u;
  for (uint32_t r = 0; r < FW_BATCH; ++r) {
    float *sample = out + r * FW_SAMPLE_VALUES;
    uint8_t *bytes = (uint8_t *)sample + 3u * FW_SAMPLE_VALUES;
    uint8_t label;
    const uint32_t at = (b->first_sample + r) * record;
    if (bsp_data_read(b->stream, at, &label, 1) || bsp_data_read(b->stream, at + 1u, bytes, FW_SAMPLE_VALUES))
      return -1;
    if (label >= FW_CLASSES) return -1;
    labels[r] = label;
    for (uint32_t i = 0; i < FW_SAMPLE_VALUES; ++i) sample[i] = (float)bytes[i] / 255.0f - FW_PIXEL_MEAN;
  }
  return 0;
}

/* Convolution and pooling shapes of forward node f (NCHW in, NCHW out). */
static fw_conv_shape conv_shape(const fw_node *f) {
  const fw_node *x = &fw_nodes[f->inputs[0]];
  const fw_conv_shape s = {x->shape[0], x->shape[1], x->shape[2], x->shape[3], f->shape[1],
                           f->shape[2], f->shape[3], f->kernel,   f->stride,   f->pad};
  return s;
}

static const float *bias_of(const fw_node *f, const float *slice, uint32_t weights) {
  return f->bias ? slice + weights : 0;
}

static int compute(int32_t v, fw_batch *b) {
  const fw_node *n = &fw_nodes[v];
  float *y = tensor(v);
  if (n->op == FW_OP_INPUT) return read_batch(b, y);
  const int backward = n->role == FW_BACKWARD;
  const int32_t fid = backward ? n->grad_of : v;
  const fw_node *f = &fw_nodes[fid];
  const float *p = f->slice >= 0 ? params + fw_slices[f->slice].offset : 0;
  float *g = f->slice >= 0 ? grads + fw_slices[f->slice].offset : 0;
  const float *dy = backward && f->op != FW_OP_SOFTMAX_CROSS_ENTROPY ? tensor(n->inputs[0]) : 0;
  const int32_t x = f->inputs[0];
  const int32_t saved = n->inputs[n->input_count ? n->input_count - 1 : 0]; /* a gradient's mask or indices: last */
  switch (f->op) {
    case FW_OP_CONV2D: {
      const fw_conv_shape s = conv_shape(f);
      const uint32_t weights = s.out_c * s.in_c * s.kernel * s.kernel;
      if (!backward) fw_conv2d_forward(&s, tensor(x), p, bias_of(f, p, weights), y);
      else if (n->op == FW_OP_GRAD_INPUT) fw_conv2d_backward_input(&s, dy, p, y);
      else fw_conv2d_backward_params(&s, dy, tensor(x), g, f->bias ? g + weights : 0);
      return 0;
    }
    case FW_OP_LINEAR: {
      const uint32_t rows = f->shape[0], in = elements(x) / rows, out = f->shape[1];
      if (!backward) fw_linear_forward(rows, in, out, tensor(x), p, bias_of(f, p, in * out), y);
      else if (n->op == FW_OP_GRAD_INPUT) fw_linear_backward_input(rows, in, out, dy, p, y);
      else fw_linear_backward_params(rows, in, out, dy, tensor(x), g, f->bias ? g + in * out : 0);
      return 0;
    }
    case FW_OP_RELU:
      if (!backward) fw_relu_forward(elements(v), tensor(x), y);
      else fw_relu_backward(elements(v), dy, bytes_of(saved), y);
      return 0;
    case FW_OP_RELU_MASK:
      fw_relu_mask(elements(x), tensor(x), bytes_of(v));
      return 0;
    case FW_OP_MAX_POOL2D: {
      const fw_conv_shape s = conv_shape(f);
      if (!backward) fw_max_pool_forward(&s, tensor(x), y);
      else fw_max_pool_backward(&s, dy, bytes_of(saved), y);
      return 0;
    }
    case FW_OP_MAX_POOL_INDICES: {
      const fw_conv_shape s = conv_shape(f);
      fw_max_pool_indices(&s, tensor(x), bytes_of(v));
      return 0;
    }
    case FW_OP_FLATTEN:
      fw_copy(elements(v), backward ? dy : tensor(x), y);
      return 0;
    case FW_OP_SOFTMAX_CROSS_ENTROPY:
      if (!backward) b->loss = fw_softmax_cross_entropy_forward(f->shape[0], f->shape[1], tensor(x), labels, y, &b->correct);
      else fw_softmax_cross_entropy_backward(f->shape[0], f->shape[1], tensor(fid), labels, y);
      return 0;
    default:
      return -1; /* the model header holds only the ops above */
  }
}

/* Runs the plan's first `end` instructions. */
static int run(uint32_t end, fw_batch *b, char *error) {
  fw_plan_cursor c;
  fw_instr in;
  b->loss = 0.0f;
  b->correct = 0;
  fw_plan_begin(&plan, &c);
  while (c.index < end && fw_plan_next(&plan, &c, &in)) {
    switch (in.kind) {
      case FW_COMPUTE:
        where[in.node] = in.offset;
        if (compute((int32_t)in.node, b)) {
          set_error(error, fw_nodes[in.node].op == FW_OP_INPUT ? "reading the data failed (train.bin / test.bin)"
                                                                 : "a node has an operator without a kernel");
          return -1;
        }
        break;
      case FW_PAGE_OUT:
        if (page_out(in.node)) {
          set_error(error, "writing a page to storage failed");
          return -1;
        }
        break;
      case FW_PAGE_IN:
        where[in.node] = in.offset;
        if (page_in(in.node)) {
          set_error(error, "reading a page from storage failed");
          return -1;
        }
        break;
      case FW_FREE:
        break;
    }
  }
  return 0;
}

int fw_train_step(fw_batch *b, char *error) {
  if (run(plan.count, b, error)) return -1;
  fw_sgd(FW_TRAINED_COUNT, FW_LEARNING_RATE, grads, params);
  return 0;
}

int fw_evaluate(fw_batch *b, char *error) { return run(plan.forward_end, b, error); }
