// Helpers for the output tests: temporary directories, reading files, golden comparison.
//
// KREPLAY_UPDATE_GOLDEN=1 makes expect_golden() rewrite src/output/testdata/<name> from the actual
// output instead of comparing (then read the diff before committing it).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kreplay::output::testing {

/// A fresh directory under the test temp dir, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "kreplay_output_XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::string read_gzip(const std::string& path) {
  std::string out;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) return out;
  char buffer[4096];
  int n;
  while ((n = gzread(gz, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  gzclose(gz);
  return out;
}

inline bool update_goldens() {
  const char* v = std::getenv("KREPLAY_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

/// Compare @p actual with testdata/@p name (or rewrite it under KREPLAY_UPDATE_GOLDEN=1).
inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(KREPLAY_OUTPUT_TESTDATA) + "/" + name;
  if (update_goldens()) {
    std::ofstream(path, std::ios::binary) << actual;
    std::cout << "updated golden " << path << "\n";
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path))
      << "missing golden " << path << "; run with KREPLAY_UPDATE_GOLDEN=1 to create it";
  std::string expected = read_file(path);
  if (expected != actual) {
    std::string got = ::testing::TempDir() + "actual_" + name;
    std::ofstream(got, std::ios::binary) << actual;
    ADD_FAILURE() << "output differs from golden " << path << "\n  actual written to " << got
                  << "\n  diff -u " << path << " " << got
                  << "\n  (KREPLAY_UPDATE_GOLDEN=1 regenerates the goldens)";
  }
}

/// A small RFC 4180 CSV reader: records of fields, quotes and doubled quotes understood.
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, field_started = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"' && !field_started) {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      record.push_back(std::move(field));
      field.clear();
      field_started = false;
    } else if (c == '\n') {
      record.push_back(std::move(field));
      records.push_back(std::move(record));
      record.clear();
      field.clear();
      field_started = false;
    } else if (c != '\r') {
      field += c;
      field_started = true;
    }
  }
  if (field_started || !record.empty()) {
    record.push_back(std::move(field));
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace kreplay::output::testing
