// Whether this host computes in the order the firmware follows (firmware/host_order.h,
// host_double.h): oneDNN running its AVX-512 kernels, and glibc its expf for CPUs with FMA,
// which every AVX-512 CPU has. There the firmware's steps are the host's bits; elsewhere
// the same math within rounding.
#pragma once

#include <oneapi/dnnl/dnnl.h>

namespace poet {

inline bool host_sums_in_firmware_order() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
}

}  // namespace poet
