/* The few double-precision steps of the host's softmax (src/kernels/softmax_row.cpp), done in
   integer arithmetic, so that the firmware's probabilities are the host's bits: the
   Cortex-M4's FPU has no double precision, and Debian has no compiler runtime for it.
   Finite normal values only (what the softmax meets); each result is rounded to nearest,
   ties to even, as IEEE 754's. A double travels as its 64 bits. */
#ifndef FW_HOST_DOUBLE_H
#define FW_HOST_DOUBLE_H

#include <stdint.h>

typedef uint64_t fw_double;

/* a b + c, rounded once (C's fma). */
fw_double fw_double_fma(fw_double a, fw_double b, fw_double c);
/* a + b */
fw_double fw_double_add(fw_double a, fw_double b);
fw_double fw_double_from_float(float x);
/* Rounded to float (subnormal floats included). */
float fw_double_to_float(fw_double x);
/* 1 / x for x > 0, rounded to double. */
fw_double fw_double_reciprocal(fw_double x);

/* expf as glibc 2.36 computes it on an x86-64 CPU with FMA (its __expf_fma: a 32-entry
   table of 2^(i/32) and a cubic in double, measured equal to it on every float of
   [-87, 0]): within 0.502 ulp, and the host's bits. */
float fw_host_expf(float x);

#endif
