// oneDNN's convolution primitives (the ones PyTorch runs on this CPU) against poet's
// convolution kernels, on resnet18_cifar's and lenet5's layer shapes (batch 32), and the
// heap allocations a primitive's execution makes. Why poet does not run them: every
// dnnl_primitive_execute allocates (oneDNN 2.6 turns its argument array into a hash map),
// and the executor promises no heap allocation in a step (docs/BENCHMARKS.md, "Kernel
// speed"). Primitives in the layouts oneDNN picks (format `any`: blocked, nChw16c), timed
// with the reorders from and to poet's NCHW / OIHW tensors and without them; and in plain
// NCHW / OIHW. Best of N calls, OMP_NUM_THREADS threads. Usage:
//   OMP_NUM_THREADS=1 build/bench/poet_bench_conv_onednn [calls, default 20]
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "conv_layers.h"
#include "poet/kernels/kernels_conv.h"

// Counts the global operator new calls while `counting`, as tests/executor_test.cpp does.
namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

// Not inlined, so the compiler does not pair a replaced operator new with free().
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }

namespace {

using poet::bench::best_ms;
using poet::kernels::Conv2dShape;

void check(dnnl_status_t status, const char* what) {
  if (status == dnnl_success) return;
  std::fprintf(stderr, "oneDNN: %s failed (status %d)\n", what, static_cast<int>(status));
  std::exit(1);
}

// A memory object over its own buffer, in the layout `md`.
struct Tensor {
  std::vector<float> data;
  dnnl_memory_t memory = nullptr;
  Tensor(const dnnl_memory_desc_t* md, dnnl_engine_t engine) : data(dnnl_memory_desc_get_size(md) / sizeof(float) + 1) {
    check(dnnl_memory_create(&memory, md, engine, data.data()), "memory_create");
  }
};

struct Engine {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  Engine() {
    check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine_create");
    check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "stream_create");
  }
};

void execute(const Engine& e, dnnl_primitive_t p, std::vector<dnnl_exec_arg_t> args) {
  check(dnnl_primitive_execute(p, e.stream, static_cast<int>(args.size()), args.data()), "execute");
  check(dnnl_stream_wait(e.stream), "stream_wait");
}

// A reorder from `from` to `to`, or none when their layouts are the same.
struct Reorder {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t from, to;
  Reorder(const Engine& e, dnnl_memory_t from_memory, dnnl_memory_t to_memory) : from(from_memory), to(to_memory) {
    const dnnl_memory_desc_t *a, *b;
    check(dnnl_memory_get_memory_desc(from, &a), "get_memory_desc");
    check(dnnl_memory_get_memory_desc(to, &b), "get_memory_desc");
    if (dnnl_memory_desc_equal(a, b)) return;
    dnnl_primitive_desc_t pd;
    check(dnnl_reorder_primitive_desc_create(&pd, a, e.engine, b, e.engine, nullptr), "reorder_primitive_desc");
    check(dnnl_primitive_create(&primitive, pd), "reorder_create");
  }
  void run(const Engine& e) const {
    if (primitive) execute(e, primitive, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }
};

struct Times {
  double forward, input, weight;  // with the reorders from and to NCHW / OIHW
  double forward_alone, input_alone, weight_alone;
  const char* implementation;
};

Times time_primitives(const Engine& e, const Conv2dShape& s, bool blocked, int calls, long* allocations_per_execute) {
  const dnnl_dims_t src{s.batch, s.in_channels, s.in_h, s.in_w},
      wei{s.out_channels, s.in_channels, s.kernel_h, s.kernel_w}, dst{s.batch, s.out_channels, s.out_h(), s.out_w()},
      strides{s.stride_h, s.stride_w}, pad{s.pad_h, s.pad_w};
  dnnl_memory_desc_t src_plain, wei_plain, dst_plain, src_any, wei_any, dst_any;
  check(dnnl_memory_desc_init_by_tag(&src_plain, 4, src, dnnl_f32, dnnl_nchw), "md");
  check(dnnl_memory_desc_init_by_tag(&wei_plain, 4, wei, dnnl_f32, dnnl_oihw), "md");
  check(dnnl_memory_desc_init_by_tag(&dst_plain, 4, dst, dnnl_f32, dnnl_nchw), "md");
  check(dnnl_memory_desc_init_by_tag(&src_any, 4, src, dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_nchw), "md");
  check(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei, dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_oihw), "md");
  check(dnnl_memory_desc_init_by_tag(&dst_any, 4, dst, dnnl_f32, blocked ? dnnl_format_tag_any : dnnl_nchw), "md");
  dnnl_convolution_desc_t fd, bdd, bwd;
  check(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &src_any, &wei_any,
                                           nullptr, &dst_any, strides, pad, pad),
        "forward_desc");
  check(dnnl_convolution_backward_data_desc_init(&bdd, dnnl_convolution_direct, &src_any, &wei_any, &dst_any, strides,
                                                 pad, pad),
        "backward_data_desc");
  check(dnnl_convolution_backward_weights_desc_init(&bwd, dnnl_convolution_direct, &src_any, &wei_any, nullptr,
                                                    &dst_any, strides, pad, pad),
        "backward_weights_desc");
  dnnl_primitive_attr_t attr;
  check(dnnl_primitive_attr_create(&attr), "attr");
  check(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "scratchpad_mode");
  dnnl_primitive_desc_t fpd, bdpd, bwpd;
  check(dnnl_primitive_desc_create(&fpd, &fd, attr, e.engine, nullptr), "forward pd");
  check(dnnl_primitive_desc_create(&bdpd, &bdd, attr, e.engine, fpd), "backward data pd");
  check(dnnl_primitive_desc_create(&bwpd, &bwd, attr, e.engine, fpd), "backward weights pd");
  const auto md = [](dnnl_primitive_desc_t pd, dnnl_query_t what) { return dnnl_primitive_desc_query_md(pd, what, 0); };
  // poet's tensors (NCHW / OIHW) and the primitives' own.
  Tensor x(&src_plain, e.engine), w(&wei_plain, e.engine), y(&dst_plain, e.engine), dx(&src_plain, e.engine),
      dw(&wei_plain, e.engine);
  Tensor fx(md(fpd, dnnl_query_src_md), e.engine), fw(md(fpd, dnnl_query_weights_md), e.engine),
      fy(md(fpd, dnnl_query_dst_md), e.engine), f_scratch(md(fpd, dnnl_query_scratchpad_md), e.engine);
  Tensor ddy(md(bdpd, dnnl_query_diff_dst_md), e.engine), dw_in(md(bdpd, dnnl_query_weights_md), e.engine),
      ddx(md(bdpd, dnnl_query_diff_src_md), e.engine), d_scratch(md(bdpd, dnnl_query_scratchpad_md), e.engine);
  Tensor wdy(md(bwpd, dnnl_query_diff_dst_md), e.engine), wx(md(bwpd, dnnl_query_src_md), e.engine),
      wdw(md(bwpd, dnnl_query_diff_weights_md), e.engine), w_scratch(md(bwpd, dnnl_query_scratchpad_md), e.engine);
  for (auto* t : {&x, &w, &y}) std::fill(t->data.begin(), t->data.end(), 0.5f);
  dnnl_primitive_t forward, backward_data, backward_weights;
  check(dnnl_primitive_create(&forward, fpd), "forward");
  check(dnnl_primitive_create(&backward_data, bdpd), "backward data");
  check(dnnl_primitive_create(&backward_weights, bwpd), "backward weights");
  const Reorder x_in(e, x.memory, fx.memory), w_in(e, w.memory, fw.memory), y_out(e, fy.memory, y.memory),
      dy_in(e, y.memory, ddy.memory), w_in_d(e, w.memory, dw_in.memory), dx_out(e, ddx.memory, dx.memory),
      dy_in_w(e, y.memory, wdy.memory), x_in_w(e, x.memory, wx.memory), dw_out(e, wdw.memory, dw.memory);
  const auto run_forward = [&] {
    execute(e, forward, {{DNNL_ARG_SRC, fx.memory}, {DNNL_ARG_WEIGHTS, fw.memory}, {DNNL_ARG_DST, fy.memory},
                         {DNNL_ARG_SCRATCHPAD, f_scratch.memory}});
  };
  const auto run_input = [&] {
    execute(e, backward_data, {{DNNL_ARG_DIFF_DST, ddy.memory}, {DNNL_ARG_WEIGHTS, dw_in.memory},
                               {DNNL_ARG_DIFF_SRC, ddx.memory}, {DNNL_ARG_SCRATCHPAD, d_scratch.memory}});
  };
  const auto run_weight = [&] {
    execute(e, backward_weights, {{DNNL_ARG_DIFF_DST, wdy.memory}, {DNNL_ARG_SRC, wx.memory},
                                  {DNNL_ARG_DIFF_WEIGHTS, wdw.memory}, {DNNL_ARG_SCRATCHPAD, w_scratch.memory}});
  };
  Times t{};
  t.forward = best_ms(calls, [&] { x_in.run(e), w_in.run(e), run_forward(), y_out.run(e); });
  t.input = best_ms(calls, [&] { dy_in.run(e), w_in_d.run(e), run_input(), dx_out.run(e); });
  t.weight = best_ms(calls, [&] { dy_in_w.run(e), x_in_w.run(e), run_weight(), dw_out.run(e); });
  t.forward_alone = best_ms(calls, run_forward);
  t.input_alone = best_ms(calls, run_input);
  t.weight_alone = best_ms(calls, run_weight);
  const char* info = nullptr;
  check(dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, &info), "impl_info");
  t.implementation = info;
  // The execution alone, its argument array already built: what a step would call.
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, fx.memory}, {DNNL_ARG_WEIGHTS, fw.memory}, {DNNL_ARG_DST, fy.memory},
                                  {DNNL_ARG_SCRATCHPAD, f_scratch.memory}};
  allocations = 0;
  counting = true;
  check(dnnl_primitive_execute(forward, e.stream, 4, args), "execute");
  counting = false;
  check(dnnl_stream_wait(e.stream), "stream_wait");
  *allocations_per_execute = allocations.load();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace poet::kernels;
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  const Engine e;
  std::printf("%d threads, best of %d calls; forward / input gradient / weight gradient, ms\n", omp_get_max_threads(),
              calls);
  std::printf("| layer | poet | oneDNN blocked, with reorders | oneDNN blocked, alone | oneDNN NCHW | allocations "
              "per execute |\n| --- | --- | --- | --- | --- | --- |\n");
  for (auto [name, s] : poet::bench::conv_layers()) {
    s.bias = false;  // the primitives are made without one
    std::vector<float> x(s.batch * s.in_channels * s.in_h * s.in_w, 0.5f),
        weight(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w, 0.5f),
        y(s.batch * s.out_channels * s.out_h() * s.out_w(), 0.5f), dx(x.size()), dweight(weight.size()),
        scratch(conv2d_scratch_elements(s));
    const double forward = best_ms(calls, [&] { conv2d_forward(s, x, weight, {}, y, scratch); });
    const double input = best_ms(calls, [&] { conv2d_backward_input(s, y, weight, dx, scratch); });
    const double params = best_ms(calls, [&] { conv2d_backward_params(s, y, x, dweight, {}, scratch); });
    long blocked_allocations = 0, plain_allocations = 0;
    const Times b = time_primitives(e, s, true, calls, &blocked_allocations);
    const Times p = time_primitives(e, s, false, calls, &plain_allocations);
    std::printf("| %s | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f (%s) | %.3f / %.3f / %.3f (%s) | "
                "%ld, %ld |\n",
                name, forward, input, params, b.forward, b.input, b.weight, b.forward_alone, b.input_alone,
                b.weight_alone, b.implementation, p.forward_alone, p.input_alone, p.weight_alone, p.implementation,
                blocked_allocations, plain_allocations);
  }
}
