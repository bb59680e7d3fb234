// Pins: kernels and writable module-scope variables read from a real cubin built by nvcc.
#include "backends/cuda/module_symbols.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace kreplay::cuda {
namespace {

std::vector<std::byte> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

TEST(ModuleSymbols, FindsKernelsAndWritableVariables) {
  auto cubin = read_file(KREPLAY_TEST_CUBIN);
  ASSERT_FALSE(cubin.empty());
  auto syms = read_module_symbols(cubin);
  ASSERT_TRUE(syms.ok()) << syms.status().message();
  EXPECT_EQ(syms->kernels, (std::vector<std::string>{"_Z16templated_kernelIdEvPT_i",
                                                      "_Z16templated_kernelIfEvPT_i",
                                                      "plain_kernel", "printf_kernel"}));
  // printf is not the device heap.
  EXPECT_FALSE(syms->uses_device_heap);
  auto find = [&](const std::string& n) {
    return std::find_if(syms->variables.begin(), syms->variables.end(),
                        [&](const auto& v) { return v.name == n; });
  };
  ASSERT_NE(find("launch_counter"), syms->variables.end());
  EXPECT_EQ(find("launch_counter")->size, 4u);
  EXPECT_FALSE(find("launch_counter")->managed);
  ASSERT_NE(find("table"), syms->variables.end());
  EXPECT_EQ(find("table")->size, 1024u);
  ASSERT_NE(find("managed_value"), syms->variables.end());
  EXPECT_TRUE(find("managed_value")->managed);
  // __constant__ memory is read-only to kernels: not a variable to restore.
  EXPECT_EQ(find("coefficients"), syms->variables.end());
}

TEST(ModuleSymbols, DeviceMallocFreeNewAndDeleteMarkTheHeap) {
  auto cubin = read_file(KREPLAY_TEST_HEAP_CUBIN);
  ASSERT_FALSE(cubin.empty());
  auto syms = read_module_symbols(cubin);
  ASSERT_TRUE(syms.ok()) << syms.status().message();
  EXPECT_TRUE(syms->uses_device_heap);
  // The heap's functions are not kernels of the module.
  EXPECT_EQ(syms->kernels, (std::vector<std::string>{"drop_shape", "make_shape", "scratch"}));
}

TEST(ModuleSymbols, RejectsNonElfImages) {
  std::vector<std::byte> ptx(64, std::byte{'/'});
  auto syms = read_module_symbols(ptx);
  EXPECT_FALSE(syms.ok());
}

}  // namespace
}  // namespace kreplay::cuda
