// A file a writer streams into: plain (stdio) or gzip (zlib). Every failure becomes a Status that
// names the path.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.hpp"

namespace kreplay::output {

/// Create the directories above @p path. The error names the directory and the fix.
Status create_parent_directories(const std::string& path);

/// Remove @p path if it exists (missing is fine). The error names the path.
Status remove_file(const std::string& path);

class OutputFile {
 public:
  /// Create or truncate @p path (its parent directories too). @p gzip writes a gzip stream.
  static Result<std::unique_ptr<OutputFile>> create(const std::string& path, bool gzip = false);
  /// Closes without reporting errors (call close() to see them) and without dropping a trailer
  /// left by flush_with_trailer(), so an abandoned file stays as complete as its last flush.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  Status write(std::string_view data);
  /// Hand buffered data to the OS (gzip: a sync flush, so the stream so far decompresses).
  Status flush();
  /// Plain files: write @p trailer, flush, and move back before it, so the file on disk is
  /// complete now and the next write replaces the trailer. Gzip streams cannot move back: this
  /// is flush() there.
  Status flush_with_trailer(std::string_view trailer);
  /// Flush and close; drops a trailer left by flush_with_trailer() that nothing replaced.
  Status close();

 private:
  OutputFile(std::string path, FILE* file, void* gz)
      : path_(std::move(path)), file_(file), gz_(gz) {}
  Status fail(const char* what, int err);
  Status close_file(bool drop_trailer);

  std::string path_;
  FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
};

/// Append the whole of @p source to @p out (used to splice section files).
Status append_file(OutputFile& out, const std::string& source);

}  // namespace kreplay::output
