// The few CUDA driver calls the CUPTI wrappers need, resolved at run time from libcuda.so.1.
//
// Why not link libcuda: kreplay_cupti is also linked into binaries that must run on machines with
// no GPU and no driver (`kreplay --list-avail --chip GH100`, the unit tests, cupti_host_probe).
// A DT_NEEDED on libcuda.so.1 would stop them from loading at all. Inside a CUDA application
// libcuda.so.1 is already loaded, so dlopen only takes another reference to it.
//
// Thread-safe: the driver is opened and resolved once, by memory/driver.hpp (memdrv::init).
#pragma once

#include <cuda.h>

#include <string>

#include "common/status.hpp"

namespace kreplay::cupti::driver {

/// OK when libcuda.so.1 was loaded and cuInit(0) succeeded; NOT_AVAILABLE with the reason
/// otherwise ("libcuda.so.1 not found: no NVIDIA driver", "cuInit: CUDA_ERROR_NO_DEVICE", ...).
Status init();

/// Number of visible CUDA devices (cuDeviceGetCount); fails like init() when there is no driver.
Result<int> device_count();

/// The current context of the calling thread (cuCtxGetCurrent); nullptr when none.
Result<CUcontext> current_context();

/// The device of @p ctx (pushes it, cuCtxGetDevice, pops it).
Result<CUdevice> context_device(CUcontext ctx);

/// Device name ("NVIDIA H200") for messages.
Result<std::string> device_name(CUdevice device);

/// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
std::string error_text(CUresult result);

}  // namespace kreplay::cupti::driver
