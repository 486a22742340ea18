// Every fp32 training kernel of the runtime, forward and backward.
#pragma once

#include "poet/kernels/kernel_shapes.h"
#include "poet/kernels/kernels_activation.h"
#include "poet/kernels/kernels_attention.h"
#include "poet/kernels/kernels_conv.h"
#include "poet/kernels/kernels_dense.h"
#include "poet/kernels/kernels_dropout.h"
#include "poet/kernels/kernels_layout.h"
#include "poet/kernels/kernels_loss.h"
#include "poet/kernels/kernels_norm.h"
#include "poet/kernels/kernels_optimizer.h"
#include "poet/kernels/kernels_pool.h"
#include "poet/kernels/rng.h"
