// SASS instruction text for the `sass` table (PC sampling, SASS metrics): CUPTI gives PC offsets
// but no disassembly, so kreplay runs NVIDIA's nvdisasm on a kept cubin and reads its listing.
//
// nvdisasm comes with the CUDA toolkit (and NVIDIA's nvidia-cuda-nvdisasm wheel), not with the
// driver: where none is found the instruction text stays empty and the caller says so once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.hpp"

namespace kreplay::cuda {

/// Instruction text by (mangled function name, byte offset from the function's start).
using Instructions = std::map<std::pair<std::string, uint64_t>, std::string>;

/// The instructions of an `nvdisasm -c` listing: each `.text.<function>` section's lines
/// `/*0150*/  FFMA R5, R5, R6, 0.5 ;` give offset 0x150 the text "FFMA R5, R5, R6, 0.5"
/// (predicates kept, runs of blanks made one, the closing ';' and braces dropped).
Instructions parse_nvdisasm(std::string_view listing);

/// The nvdisasm to run: $KREPLAY_NVDISASM, else `nvdisasm` on $PATH, else $CUDA_HOME/bin,
/// $CUDA_PATH/bin and /usr/local/cuda/bin; "" when there is none (or KREPLAY_NVDISASM is empty).
std::string find_nvdisasm();

/// Run @p tool (`nvdisasm -c FILE`) on @p cubin, written to a temporary file, and parse what it
/// prints. An error says what failed (the tool could not start, or exited non-zero with its
/// first line of output).
Result<Instructions> disassemble(std::span<const std::byte> cubin, const std::string& tool);

}  // namespace kreplay::cuda
