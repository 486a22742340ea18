// Every fp32 training kernel of the runtime, forward and backward.
#pragma once

#include "poet/runtime/kernel_shapes.h"
#include "poet/runtime/kernels_activation.h"
#include "poet/runtime/kernels_attention.h"
#include "poet/runtime/kernels_conv.h"
#include "poet/runtime/kernels_dense.h"
#include "poet/runtime/kernels_dropout.h"
#include "poet/runtime/kernels_loss.h"
#include "poet/runtime/kernels_norm.h"
#include "poet/runtime/kernels_pool.h"
#include "poet/runtime/rng.h"
