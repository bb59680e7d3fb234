// Pins: the `sass` table's instruction text on CUDA comes from an nvdisasm listing, read per
// function and offset; the tool is run on a temporary copy of the cubin, found through
// KREPLAY_NVDISASM, and a failing or missing tool is an error that says why.
#include "backends/cuda/disassembly.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace kreplay::cuda {
namespace {

std::string testdata(const char* name) { return std::string(KREPLAY_TEST_DATA) + "/" + name; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Disassembly, ParsesEachFunctionsInstructionsByOffset) {
  Instructions ins = parse_nvdisasm(read(testdata("nvdisasm_listing.txt")));
  EXPECT_EQ(ins.size(), 8u);
  EXPECT_EQ(ins.at({"_Z3hotPfi", 0x0}), "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(ins.at({"_Z3hotPfi", 0x80}), "@!P0 BRA `(.L_x_0)");
  EXPECT_EQ(ins.at({"_Z3hotPfi", 0x150}), "FFMA R5, R5, R6, 0.5");  // blanks made one
  EXPECT_EQ(ins.at({"_Z3hotPfi", 0x300}), "EXIT");
  // Another function's offsets start again at 0; braces and ';' are dropped.
  EXPECT_EQ(ins.at({"_Z4copyPKfPf", 0x0}), "LDG.E R3, desc[UR4][R2.64]");
  EXPECT_EQ(ins.at({"_Z4copyPKfPf", 0x10}), "STG.E desc[UR4][R4.64], R3");
  // The .nv.info section's /*0000*/ data line is no instruction.
  EXPECT_EQ(ins.count({"_Z3hotPfi", 0x10}), 1u);
  for (const auto& [key, text] : ins) EXPECT_NE(text.find_first_not_of(' '), std::string::npos);
}

TEST(Disassembly, EmptyOrForeignTextHasNoInstructions) {
  EXPECT_TRUE(parse_nvdisasm("").empty());
  EXPECT_TRUE(parse_nvdisasm("nvdisasm fatal   : Input file is not a supported cubin\n").empty());
  // Code lines outside any .text section belong to no function.
  EXPECT_TRUE(parse_nvdisasm("        /*0000*/   EXIT ;\n").empty());
}

TEST(Disassembly, RunsTheToolOnACopyOfTheCubin) {
  std::vector<std::byte> cubin(4096, std::byte{0x7f});
  auto ins = disassemble(cubin, testdata("fake_nvdisasm.sh"));
  ASSERT_TRUE(ins.ok()) << ins.status().message();
  EXPECT_EQ(ins->at({"_Z3hotPfi", 0x150}), "FFMA R5, R5, R6, 0.5");
}

TEST(Disassembly, AFailingToolIsAnErrorWithItsMessage) {
  std::vector<std::byte> cubin(16, std::byte{1});
  auto ins = disassemble(cubin, testdata("fake_nvdisasm_fail.sh"));
  ASSERT_FALSE(ins.ok());
  EXPECT_NE(ins.status().message().find("exit 1"), std::string::npos) << ins.status().message();
  EXPECT_NE(ins.status().message().find("not a supported cubin"), std::string::npos);
  auto missing = disassemble(cubin, "/nonexistent/nvdisasm");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/nvdisasm"), std::string::npos);
  EXPECT_FALSE(disassemble(cubin, "").ok());
}

TEST(Disassembly, KreplayNvdisasmChoosesTheTool) {
  ::setenv("KREPLAY_NVDISASM", "/opt/x/nvdisasm", 1);
  EXPECT_EQ(find_nvdisasm(), "/opt/x/nvdisasm");
  ::setenv("KREPLAY_NVDISASM", "", 1);  // empty: none
  EXPECT_EQ(find_nvdisasm(), "");
  ::unsetenv("KREPLAY_NVDISASM");
  const std::string found = find_nvdisasm();  // whatever this machine has, or none
  if (!found.empty()) {
    EXPECT_NE(found.find("nvdisasm"), std::string::npos);
  }
}

}  // namespace
}  // namespace kreplay::cuda
