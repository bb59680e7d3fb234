#include "output/output_file.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace kreplay::output {

namespace fs = std::filesystem;

Status create_parent_directories(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  std::error_code ec;
  if (fs::is_directory(parent, ec)) return Status::Ok();
  fs::create_directories(parent, ec);
  if (ec) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot create output directory '{}': {}; choose a writable output "
                             "directory",
                             parent.string(), ec.message()));
  }
  return Status::Ok();
}

Status remove_file(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot replace '{}': {}; remove it or choose another output "
                             "directory",
                             path, ec.message()));
  }
  return Status::Ok();
}

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& path, bool gzip) {
  RETURN_IF_ERROR(create_parent_directories(path));
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot create output file '{}': {}; choose a writable output "
                             "directory",
                             path, std::strerror(errno)));
  }
  void* gz = nullptr;
  if (gzip) {
    int fd = ::dup(::fileno(file));
    gz = fd >= 0 ? ::gzdopen(fd, "wb6") : nullptr;
    if (gz == nullptr) {
      if (fd >= 0) ::close(fd);
      std::fclose(file);
      return Error(KREPLAY_STATUS_ERROR, fmt::format("cannot start a gzip stream in '{}'", path));
    }
    std::fclose(file);  // zlib owns the duplicated descriptor
    file = nullptr;
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, file, gz));
}

OutputFile::~OutputFile() {
  (void)close_file(/*drop_trailer=*/false);
}

Status OutputFile::fail(const char* what, int err) {
  return Error(KREPLAY_STATUS_ERROR, fmt::format("cannot {} '{}': {}", what, path_,
                                                 err != 0 ? std::strerror(err) : "unknown error"));
}

Status OutputFile::write(std::string_view data) {
  if (file_ == nullptr && gz_ == nullptr) return fail("write to closed file", 0);
  if (data.empty()) return Status::Ok();
  if (gz_ != nullptr) {
    int n = ::gzwrite(static_cast<gzFile>(gz_), data.data(), static_cast<unsigned>(data.size()));
    if (n <= 0 || static_cast<size_t>(n) != data.size()) return fail("write", errno);
    return Status::Ok();
  }
  if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) return fail("write", errno);
  return Status::Ok();
}

Status OutputFile::flush() {
  if (gz_ != nullptr) {
    if (::gzflush(static_cast<gzFile>(gz_), Z_SYNC_FLUSH) != Z_OK) return fail("flush", errno);
    return Status::Ok();
  }
  if (file_ == nullptr) return fail("flush closed file", 0);
  if (std::fflush(file_) != 0) return fail("flush", errno);
  return Status::Ok();
}

Status OutputFile::flush_with_trailer(std::string_view trailer) {
  if (gz_ != nullptr) return flush();
  if (file_ == nullptr) return fail("flush closed file", 0);
  long pos = std::ftell(file_);
  if (pos < 0) return fail("tell position in", errno);
  RETURN_IF_ERROR(write(trailer));
  RETURN_IF_ERROR(flush());
  if (std::fseek(file_, pos, SEEK_SET) != 0) return fail("seek in", errno);
  return Status::Ok();
}

Status OutputFile::close() {
  return close_file(/*drop_trailer=*/true);
}

Status OutputFile::close_file(bool drop_trailer) {
  Status status;
  if (gz_ != nullptr) {
    if (::gzclose(static_cast<gzFile>(gz_)) != Z_OK) status = fail("close", errno);
    gz_ = nullptr;
  }
  if (file_ != nullptr) {
    if (std::fflush(file_) != 0) status = fail("flush", errno);
    // Cut whatever lies past the last write (a trailer that nothing replaced, or its tail).
    long pos = drop_trailer ? std::ftell(file_) : -1;
    if (status.ok() && pos >= 0 && ::ftruncate(::fileno(file_), pos) != 0) {
      status = fail("truncate", errno);
    }
    if (std::fclose(file_) != 0 && status.ok()) status = fail("close", errno);
    file_ = nullptr;
  }
  return status;
}

Status append_file(OutputFile& out, const std::string& source) {
  FILE* in = std::fopen(source.c_str(), "rb");
  if (in == nullptr) {
    return Error(KREPLAY_STATUS_ERROR,
                 fmt::format("cannot read '{}': {}", source, std::strerror(errno)));
  }
  char buffer[1 << 16];
  Status status;
  while (status.ok()) {
    size_t n = std::fread(buffer, 1, sizeof buffer, in);
    if (n > 0) status = out.write(std::string_view(buffer, n));
    if (n < sizeof buffer) {
      if (std::ferror(in)) {
        status = Error(KREPLAY_STATUS_ERROR, fmt::format("cannot read '{}'", source));
      }
      break;
    }
  }
  std::fclose(in);
  return status;
}

}  // namespace kreplay::output
