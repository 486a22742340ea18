/* The types of the generated model header (`poet firmware --header model.h`): one fw_node
   per node of poet's training graph, in its execution order, so that node ids in the
   device plan index fw_nodes directly. */
#ifndef FW_MODEL_TYPES_H
#define FW_MODEL_TYPES_H

#include <stdint.h>

enum fw_op {
  FW_OP_INPUT,
  FW_OP_CONV2D,
  FW_OP_LINEAR,
  FW_OP_RELU,
  FW_OP_MAX_POOL2D,
  FW_OP_FLATTEN,
  FW_OP_SOFTMAX_CROSS_ENTROPY,
  FW_OP_RELU_MASK,        /* 1 bit per element of a ReLU's output, 8 to a byte: its backward reads it */
  FW_OP_MAX_POOL_INDICES, /* per max-pool output, its window's arg-max (one byte): its backward reads it */
  FW_OP_GRAD_INPUT, /* the gradient of input `grad_slot` of node `grad_of` */
  FW_OP_GRAD_PARAM  /* the gradient of node `grad_of`'s parameters, into the gradient region */
};

enum fw_role { FW_FORWARD, FW_LOSS, FW_BACKWARD };

typedef struct {
  uint8_t op;          /* enum fw_op */
  uint8_t role;        /* enum fw_role */
  int16_t inputs[4];   /* node ids in argument order; -1 past input_count */
  uint8_t input_count;
  int16_t grad_of;     /* a backward node's forward node, else -1 */
  int8_t grad_slot;    /* the forward input differentiated; -1: the parameters */
  uint16_t shape[4];   /* output shape, NCHW or [rows, features], padded with 1 */
  uint32_t bytes;      /* output bytes (0 for a parameter gradient): fp32, or a mask's or indices' bytes */
  uint8_t kernel, stride, pad, bias; /* of the forward node: convolution and pooling (and its indices) */
  int8_t slice;        /* index in fw_slices of the forward node's parameters, or -1 */
} fw_node;

typedef struct {
  int16_t node;
  uint32_t offset; /* floats into the parameters and, alike, the gradients */
  uint32_t count;
} fw_slice;

#endif
