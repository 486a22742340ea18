/* The training runtime: runs the device plan's instructions over one static arena of the
   plan's size, with the parameters and gradients in their own static arrays. No heap. */
#ifndef FW_RUNTIME_H
#define FW_RUNTIME_H

#include <stdint.h>

#include "bsp.h"

typedef struct {
  enum bsp_stream stream;
  uint32_t first_sample; /* the batch: samples first_sample .. + batch of the stream */
  float loss;            /* the batch's mean */
  uint32_t correct;      /* rows predicted right */
} fw_batch;

typedef struct {
  uint32_t paged_out_bytes, paged_in_bytes; /* since start-up */
  uint32_t arena_bytes, arena_capacity;     /* the plan's; the static arena's */
  uint32_t instructions, batch, parameters;
  const char *model;
} fw_stats;

/* Validates the plan against the model and the arena (plan.h); 0, or -1 with `error` set. */
int fw_runtime_init(char *error);
/* One training step on the batch: every instruction, then SGD. 0, or -1 if storage or
   the data failed (`error` says which). */
int fw_train_step(fw_batch *batch, char *error);
/* The forward part of the plan (up to the loss) on the batch; changes no parameter. */
int fw_evaluate(fw_batch *batch, char *error);
const fw_stats *fw_runtime_stats(void);
/* The parameters, FW_PARAM_COUNT floats in poet's ParameterStore layout. */
const float *fw_parameters(uint32_t *count);

#endif
