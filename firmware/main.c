/* Trains the model of model.h with the device plan of device_plan.h: one epoch over the
   training stream (train=N samples, steps=K to stop early), the weights written to the
   result file (after every step with trace=1), then the accuracy on the test stream
   (test=N samples), the memory figures, and last one JSON line. Exit codes: 0 trained, 1 storage or data failed, 2 the plan was
   rejected, 3 a fault. */
#include "bsp.h"
#include "libc.h"
#include "runtime.h"
#include "startup.h"

static void print_line(const char *s) {
  fw_print(s);
  fw_print("\n");
}

static int failed(const char *stage, const char *error) {
  fw_print("firmware: ");
  fw_print(stage);
  fw_print(": ");
  print_line(error);
  return 1;
}

void fw_print_fault(void) { print_line("firmware: a fault (bad memory access or instruction); stopping"); }

/* 0.1234 as "0.1234" in JSON. */
static void print_json_float(const char *key, float v, int decimals) {
  fw_print("\"");
  fw_print(key);
  fw_print("\": ");
  fw_print_float(v, decimals);
}

static void print_json_u32(const char *key, uint32_t v) {
  fw_print("\"");
  fw_print(key);
  fw_print("\": ");
  fw_print_u32(v);
}

int main(void) {
  char error[120];
  if (fw_runtime_init(error)) {
    fw_print("firmware: the device plan is rejected: ");
    print_line(error);
    return 2;
  }
  const fw_stats *st = fw_runtime_stats();
  const char *args = bsp_arguments();
  const uint32_t train = fw_argument(args, "train", 6000), test = fw_argument(args, "test", 1000);
  const uint32_t progress = fw_argument(args, "progress", 100), trace = fw_argument(args, "trace", 0);
  uint32_t count;
  const float *weights = fw_parameters(&count);
  uint32_t steps = train / st->batch;
  steps = fw_argument(args, "steps", steps) < steps ? fw_argument(args, "steps", steps) : steps;

  fw_print("firmware: model ");
  fw_print(st->model);
  fw_print(", batch ");
  fw_print_u32(st->batch);
  fw_print(", ");
  fw_print_u32(st->parameters);
  fw_print(" parameters, plan of ");
  fw_print_u32(st->instructions);
  fw_print(" instructions, arena ");
  fw_print_u32(st->arena_bytes);
  fw_print(" bytes; SRAM reserved ");
  fw_print_u32(fw_sram_used());
  fw_print(" of 262144 bytes (stack ");
  fw_print_u32(fw_stack_size());
  print_line(")");

  const uint32_t began = bsp_clock_ms();
  float loss_sum = 0.0f;
  uint32_t correct = 0;
  for (uint32_t s = 0; s < steps; ++s) {
    fw_batch b = {BSP_TRAIN_DATA, s * st->batch, 0.0f, 0};
    if (fw_train_step(&b, error)) return failed("training", error);
    if (trace && bsp_result_write(weights, count * (uint32_t)sizeof(float)))
      return failed("writing the weights", "the result file could not be written");
    loss_sum += b.loss;
    correct += b.correct;
    if ((s + 1) % progress == 0 || s + 1 == steps) {
      fw_print("step ");
      fw_print_u32(s + 1);
      fw_print("/");
      fw_print_u32(steps);
      fw_print("  loss ");
      fw_print_float(loss_sum / (float)(s + 1), 4);
      fw_print("  train accuracy ");
      fw_print_float((float)correct / (float)((s + 1) * st->batch), 4);
      fw_print("  ");
      fw_print_u32((bsp_clock_ms() - began) / 1000u);
      print_line(" s");
    }
  }
  const uint32_t train_ms = bsp_clock_ms() - began;
  const uint32_t paged_out = st->paged_out_bytes, paged_in = st->paged_in_bytes; /* by training */

  if (!trace && bsp_result_write(weights, count * (uint32_t)sizeof(float)))
    return failed("writing the weights", "the result file could not be written");

  uint32_t test_correct = 0, test_rows = 0;
  for (uint32_t first = 0; first + st->batch <= test; first += st->batch) {
    fw_batch b = {BSP_TEST_DATA, first, 0.0f, 0};
    if (fw_evaluate(&b, error)) return failed("testing", error);
    test_correct += b.correct;
    test_rows += st->batch;
  }
  const float accuracy = test_rows ? (float)test_correct / (float)test_rows : 0.0f;

  fw_print("trained ");
  fw_print_u32(steps);
  fw_print(" steps (");
  fw_print_u32(steps * st->batch);
  fw_print(" images) in ");
  fw_print_float((float)train_ms / 1000.0f, 1);
  print_line(" s");
  fw_print("test accuracy ");
  fw_print_float(accuracy, 4);
  fw_print(" on ");
  fw_print_u32(test_rows);
  print_line(" images");
  fw_print("arena ");
  fw_print_u32(st->arena_bytes);
  fw_print(" bytes; training paged ");
  fw_print_u32(paged_out);
  fw_print(" bytes out and ");
  fw_print_u32(paged_in);
  fw_print(" in; stack high-water mark ");
  fw_print_u32(fw_stack_high_water());
  fw_print(" of ");
  fw_print_u32(fw_stack_size());
  print_line(" bytes");
  fw_print("{");
  print_json_float("test_accuracy", accuracy, 4);
  fw_print(", ");
  print_json_u32("arena_bytes", st->arena_bytes);
  fw_print(", ");
  print_json_u32("sram_bytes", fw_sram_used());
  fw_print(", ");
  print_json_u32("paged_bytes", paged_out + paged_in);
  fw_print(", ");
  print_json_u32("stack_bytes", fw_stack_high_water());
  fw_print(", ");
  print_json_u32("steps", steps);
  fw_print(", ");
  print_json_u32("train_ms", train_ms);
  print_line("}");
  return 0;
}
