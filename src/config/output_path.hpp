// Output names: template expansion and the rule for processes that would write the same file.
//
// Templates (-d/--output-directory, -o/--output-file) may contain:
//   %hostname%  %h     the host name
//   %pid%       %p     the process id of the process that writes (the application)
//   %ppid%             its parent's process id
//   %rank%             the MPI rank (see kRankVariables), or the pid when no rank is known
//   %q{VAR}            the value of environment variable VAR (ncu, nsys)
//   %env{VAR}%         the same (rocprofv3)
//   %%                 a literal '%'
// Any other "%name%" and a variable that is not set are errors. The tool expands the templates in
// the application's process; the command checks their syntax before it starts the application.
//
// Several processes, one name. The default file name "%hostname%/%pid%" differs per process. A
// name without %pid%, %p, %rank% or %q{...} (template_is_per_process() is false) would be
// written by every process of a forking or MPI application (rocm-systems#7472). The writer then
// claims its file with claim_output_base(): the first process gets the name as given, and every
// later one, finding it taken, writes "<name>.<pid>" instead and says so in one log line. No
// process overwrites another's output.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.hpp"
#include "config/tool_config.hpp"

namespace kreplay::config {

/// Environment variables that give the MPI rank, in the order they are consulted; the first that
/// holds a non-negative integer wins. KREPLAY_RANK lets the user override the others; Open MPI's
/// variable comes before SLURM_PROCID because mpirun inside a Slurm allocation sets both, and so
/// does torchrun's RANK (torchrun in a Slurm job: SLURM_PROCID numbers the torchrun, not the
/// worker).
inline constexpr std::array<const char*, 10> kRankVariables = {
    "KREPLAY_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
    "PALS_RANKID",  "FLUX_TASK_RANK",       "RANK",                "SLURM_PROCID", "MPI_RANK"};

/// The same for the rank within the node (torchrun's LOCAL_RANK, Open MPI, MVAPICH, MPICH, PALS,
/// Slurm): recorded in the run table.
inline constexpr std::array<const char*, 6> kLocalRankVariables = {
    "LOCAL_RANK",      "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID", "PALS_LOCAL_RANKID",          "SLURM_LOCALID"};

/// The default -o, and the default when a rank is known (mpi_rank()): "<host>/<rank>_results.db".
inline constexpr const char* kDefaultOutputFile = "%hostname%/%pid%";
inline constexpr const char* kDefaultRankOutputFile = "%hostname%/%rank%";

/// What templates expand from. current() reads the calling process; tests build their own.
struct ExpansionContext {
  std::string hostname;
  int64_t pid = 0;
  int64_t ppid = 0;
  /// Environment lookup; nullopt when the variable is unset.
  std::function<std::optional<std::string>(const std::string&)> getenv;

  static ExpansionContext current();
};

/// The MPI rank from kRankVariables, or nullopt when none holds a non-negative integer.
std::optional<int64_t> mpi_rank(const ExpansionContext& context);
/// The rank within the node from kLocalRankVariables, or nullopt.
std::optional<int64_t> local_rank(const ExpansionContext& context);

/// Expand @p text. Errors (one line): an unknown "%name%", a '%' that starts no token, an
/// unterminated %q{ or %env{, or an environment variable that is not set.
Result<std::string> expand_output_template(std::string_view text, const ExpansionContext& context);

/// Check the syntax of @p text without expanding it (variables need not be set).
Status validate_output_template(std::string_view text);

/// True when @p text differs between processes: it has %pid%, %p, %rank% or %q{...}.
bool template_is_per_process(std::string_view text);

/// "<directory>/<file>", both expanded: the base that writers append "_results.db" and the like
/// to. An absolute file template ignores the directory. With the default file (no -o) and a rank
/// known, the file is kDefaultRankOutputFile.
Result<std::string> output_base_path(const OutputOptions& output, const ExpansionContext& context);

/// Claim @p base for this process by creating "<base><first_suffix>" exclusively (O_EXCL), with
/// its parent directories. When another process holds that file already, claim
/// "<base>.<pid><first_suffix>" instead. Returns the base that was claimed; the created file is
/// empty and the writer opens it for writing.
Result<std::string> claim_output_base(const std::string& base, std::string_view first_suffix,
                                      int64_t pid);

/// Create @p directory and its parents (like mkdir -p).
Status make_directories(const std::string& directory);

}  // namespace kreplay::config
