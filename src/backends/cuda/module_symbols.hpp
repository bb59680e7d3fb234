// Symbols of a loaded CUDA module, read from its cubin (an ELF image) with libelf: the kernels it
// defines and the module-scope variables (__device__ and __managed__) kernels may write. Constant
// memory (__constant__) is read-only to kernels and is left out, as are shared and local symbols.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.hpp"

namespace kreplay::cuda {

struct ModuleSymbols {
  struct Variable {
    std::string name;
    uint64_t size = 0;
    bool managed = false;
  };
  std::vector<std::string> kernels;  ///< mangled names
  std::vector<Variable> variables;
  /// The module calls the device-side heap (undefined symbols malloc or free: device malloc,
  /// free, new and delete compile to calls of them).
  bool uses_device_heap = false;
};

/// Parse a cubin. Errors when the bytes are not an ELF image (e.g. PTX or a compressed fatbin).
Result<ModuleSymbols> read_module_symbols(std::span<const std::byte> cubin);

}  // namespace kreplay::cuda
