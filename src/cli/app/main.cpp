// The kreplay command: kreplay [options] -- app [args]
//
// Parses the options (cli/options.hpp) and input files into a run plan (cli/plan.hpp), then for
// each planned run starts the application with kreplay's tool injected: KREPLAY_TOOL_LIBRARIES
// names libkreplay_tool.so, KREPLAY_TOOL_CONFIG carries the run's ToolConfig, and (for CUDA
// applications) CUDA_INJECTION64_PATH names libkreplay_cuda.so. It waits for the application and
// exits with its exit code (128 + signal when it was killed). Application replay merges the runs'
// databases into one. --list-avail and --pmc-check answer from the GPU, from a chip name with no
// GPU, or from the host device.
#include <dlfcn.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "backends/host/hostrt.hpp"
#include "cli/options.hpp"
#include "cli/plan.hpp"
#include "common/env.hpp"
#include "common/logging.hpp"
#include "common/util.hpp"
#include "config/output_path.hpp"
#include "config/tool_config.hpp"
#include "kreplay/kreplay.h"
#include "output/writer.hpp"
#include "report/command.hpp"
#include "report/listing.hpp"
#include "report/sections.hpp"
#if KREPLAY_CLI_HAVE_CUPTI
#include "backends/cuda/cupti/profiler_host.hpp"
#include "backends/cuda/cupti/service_catalog.hpp"
#endif

extern char** environ;  // NOLINT

namespace kreplay::cli {

using config::ExpansionContext;
using config::kToolConfigEnv;
using config::output_base_path;
using config::serialize_tool_config;
using config::tool_config_inline_value;
using config::ToolConfig;

namespace {

namespace fs = std::filesystem;

int fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "==KREPLAY== error: %s\n", message.c_str());
  return code;
}

// <prefix>/bin/kreplay → <prefix>/lib
fs::path lib_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "lib";
}

// ---- counters without running an application ----

std::optional<std::string> local_gpu_chip() {
#if KREPLAY_CLI_HAVE_CUPTI
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (cuda == nullptr) return std::nullopt;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  int n = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&n) != 0 || n == 0)
    return std::nullopt;
  auto chip = cupti::ProfilerHost::device_chip_name(0);
  if (chip.ok()) return *chip;
#endif
  return std::nullopt;
}

struct HostCounters {
  std::vector<kreplay_counter_info_t> list;
  uint32_t per_pass = 0;
};

Result<HostCounters> host_counters() {
  RETURN_IF_ERROR(hostrt::init());
  kreplay_agent_t agent{};
  agent.size = sizeof(agent);
  if (kreplay_query_agent(0, &agent) != KREPLAY_STATUS_SUCCESS)
    return Error(KREPLAY_STATUS_ERROR, "the host device did not start");
  HostCounters out;
  out.per_pass = agent.counters_per_pass;
  kreplay_iterate_agent_counters(
      agent.id,
      [](kreplay_agent_id_t, const kreplay_counter_info_t* c, size_t n, void* ud) {
        auto* v = static_cast<std::vector<kreplay_counter_info_t>*>(ud);
        v->assign(c, c + n);
        return KREPLAY_STATUS_SUCCESS;
      },
      &out.list);
  return out;
}

bool is_host_chip(const std::string& chip) { return chip == "HOSTDEV" || chip == "host"; }

// What the host device's per-pass services collect, one block per service.
void list_host_services() {
  struct Listed {
    const char* title;
    std::vector<kreplay_pass_service_metric_t> metrics;
  };
  const std::pair<kreplay_pass_service_kind_t, const char*> kinds[] = {
      {KREPLAY_PASS_SERVICE_SASS_METRICS, "SASS metrics (--sass-metrics; * = --source-counters)"},
      {KREPLAY_PASS_SERVICE_PM_SAMPLING, "PM sampling metrics (--pm-sampling)"},
      {KREPLAY_PASS_SERVICE_PC_SAMPLING, "PC sampling stall reasons (--pc-sampling)"}};
  for (const auto& [kind, title] : kinds) {
    Listed l{title, {}};
    kreplay_status_t s = kreplay_iterate_pass_service_metrics(
        {hostrt::testing::agent_of()}, kind,
        [](kreplay_agent_id_t, kreplay_pass_service_kind_t, const kreplay_pass_service_metric_t* m,
           size_t n, void* ud) {
          static_cast<Listed*>(ud)->metrics.assign(m, m + n);
          return KREPLAY_STATUS_SUCCESS;
        },
        &l);
    if (s != KREPLAY_STATUS_SUCCESS) continue;
    std::printf("# host device: %zu %s\n", l.metrics.size(), title);
    for (const auto& m : l.metrics) {
      const bool star = kind == KREPLAY_PASS_SERVICE_SASS_METRICS && m.in_default_set;
      const std::string name = std::string(m.name) + (star ? "*" : "");
      std::printf("%-41s %s\n", name.c_str(), m.description);
    }
  }
}

#if KREPLAY_CLI_HAVE_CUPTI
// The per-pass services of a CUDA chip. SASS metrics come from CUPTI for a chip name, but CUPTI
// answers only with a driver loaded; PM sampling takes the base metrics listed above; stall
// reasons are a property of a context, so they are listed only when @p on_gpu (the chip is the
// local GPU's).
void list_cuda_services(const std::string& chip, bool on_gpu) {
  auto sass = cupti::sass_metrics(chip);
  if (sass.ok()) {
    std::printf("# chip %s: %zu SASS metrics (--sass-metrics; * = --source-counters)\n",
                chip.c_str(), sass->size());
    for (const auto& m : *sass) {
      const std::string name = m.name + (cupti::in_sass_default_set(m.name) ? "*" : "");
      std::printf("%-45s %s\n", name.c_str(), m.description.c_str());
    }
  } else {
    std::printf("# SASS metrics (--sass-metrics): %s\n", sass.status().message().c_str());
  }
  std::printf("# PM sampling metrics (--pm-sampling): the base metrics above with a rollup suffix "
              "(e.g. dram__throughput.avg.pct_of_peak_sustained_elapsed), single-pass sets only\n");
  if (!on_gpu) {
    std::printf("# PC sampling stall reasons (--pc-sampling): CUPTI lists them for a GPU context; "
                "run --list-avail on the GPU machine\n");
    return;
  }
  auto reasons = cupti::pc_stall_reasons_of_device(0);
  if (!reasons.ok()) {
    std::printf("# PC sampling stall reasons (--pc-sampling): %s\n",
                reasons.status().message().c_str());
    return;
  }
  std::printf("# chip %s: %zu PC sampling stall reasons (--pc-sampling)\n", chip.c_str(),
              reasons->size());
  for (const auto& r : *reasons) std::printf("%s\n", r.name.c_str());
}
#endif

int list_avail(const std::optional<std::string>& chip_option) {
  std::optional<std::string> chip = chip_option;
  if (!chip) chip = local_gpu_chip();
  if (!chip || is_host_chip(*chip)) {
    auto c = host_counters();
    if (!c.ok()) return fail(c.status().message());
    if (!chip) {
      std::printf("# No NVIDIA GPU found: the host device's counters (use --chip GH100 to list an "
                  "H100/H200's counters without a GPU).\n");
    }
    std::printf("# host device (chip HOSTDEV): %zu counters, %u per pass\n", c->list.size(), c->per_pass);
    for (const auto& i : c->list) std::printf("%-20s %-10s %s\n", i.name, i.unit, i.description);
    list_host_services();
    return 0;
  }
#if KREPLAY_CLI_HAVE_CUPTI
  auto host = cupti::ProfilerHost::shared(*chip);
  if (!host.ok()) return fail(host.status().message());
  auto metrics = (*host)->list_metrics();
  if (!metrics.ok()) return fail(metrics.status().message());
  std::printf("# chip %s: %zu base metrics; a full name adds a suffix (e.g. .sum, .avg, .max, "
              ".pct_of_peak_sustained_elapsed)\n",
              chip->c_str(), metrics->size());
  for (const auto& m : *metrics) {
    std::printf("%-70s %-10s %s\n", m.name.c_str(), m.unit.c_str(), m.description.c_str());
  }
  list_cuda_services(*chip, !chip_option.has_value() || local_gpu_chip() == chip);
  return 0;
#else
  return fail(fmt::format("this kreplay was built without CUDA; it cannot list chip '{}' (use "
                          "--chip HOSTDEV for the host device)",
                          *chip));
#endif
}

int pmc_check(const std::optional<std::string>& chip_option, const std::vector<std::string>& names) {
  std::optional<std::string> chip = chip_option;
  if (!chip) chip = local_gpu_chip();
  if (!chip || is_host_chip(*chip)) {
    auto c = host_counters();
    if (!c.ok()) return fail(c.status().message());
    const char* const* ptrs = nullptr;
    std::vector<const char*> v;
    for (const auto& n : names) v.push_back(n.c_str());
    ptrs = v.data();
    kreplay_counter_config_id_t id{};
    kreplay_status_t s = kreplay_create_counter_config({hostrt::testing::agent_of()}, ptrs, v.size(), &id);
    if (s == KREPLAY_STATUS_SUCCESS) {
      std::printf("==KREPLAY== %s fit one pass on the host device\n", fmt::format("{}", fmt::join(names, " ")).c_str());
      return 0;
    }
    uint64_t passes = (names.size() + c->per_pass - 1) / std::max<uint32_t>(1, c->per_pass);
    if (s == KREPLAY_STATUS_ERROR_EXCEEDS_HW_LIMIT) {
      std::printf("==KREPLAY== %s need %llu passes on the host device (%u counters per pass)\n",
                  fmt::format("{}", fmt::join(names, " ")).c_str(),
                  static_cast<unsigned long long>(passes), c->per_pass);
      return 1;
    }
    return fail(kreplay_get_last_error_message());
  }
#if KREPLAY_CLI_HAVE_CUPTI
  auto host = cupti::ProfilerHost::shared(*chip);
  if (!host.ok()) return fail(host.status().message());
  auto passes = (*host)->pass_count(names);
  if (!passes.ok()) return fail(passes.status().message());
  if (*passes <= 1) {
    std::printf("==KREPLAY== %s fit one pass on %s\n", fmt::format("{}", fmt::join(names, " ")).c_str(),
                chip->c_str());
    return 0;
  }
  std::printf("==KREPLAY== %s need %zu passes on %s (kreplay replays each kernel that many times)\n",
              fmt::format("{}", fmt::join(names, " ")).c_str(), *passes, chip->c_str());
  return 1;
#else
  return fail("this kreplay was built without CUDA; use --chip HOSTDEV");
#endif
}

// ---- sets and sections ----

int list_catalog(const RunPlan& plan) {
  auto catalog = report::Catalog::load(plan.section_folders);
  if (!catalog.ok()) return fail(catalog.status().message());
  report::PassCounter passes;
  std::string chip = plan.chip.value_or("");
#if KREPLAY_CLI_HAVE_CUPTI
  if (!chip.empty() && !is_host_chip(chip)) {
    auto host = cupti::ProfilerHost::shared(chip);
    if (!host.ok()) return fail(host.status().message());
    passes = [h = *host](const std::vector<std::string>& names) -> std::optional<size_t> {
      auto n = h->pass_count(names);
      if (!n.ok()) return std::nullopt;
      return *n;
    };
  }
#else
  if (!chip.empty() && !is_host_chip(chip)) {
    return fail(fmt::format("this kreplay was built without CUDA; it cannot count passes on chip "
                            "'{}' (leave out --chip to list them without pass counts)",
                            chip));
  }
#endif
  const std::string text = plan.action == PlanAction::kListSets
                               ? report::list_sets(*catalog, chip, passes)
                               : report::list_sections(*catalog, chip, passes);
  std::fputs(text.c_str(), stdout);
  return 0;
}

// ---- running the application ----

pid_t g_child = 0;
volatile sig_atomic_t g_stop_signal = 0;  // a signal kreplay itself received

void forward_signal(int sig) {
  g_stop_signal = sig;
  if (g_child > 0) kill(g_child, sig);
}

struct RunResult {
  int exit_code = 0;
  pid_t pid = 0;
};

Result<RunResult> run_application(const std::vector<std::string>& command,
                                  const std::vector<std::pair<std::string, std::string>>& env) {
  pid_t pid = fork();
  if (pid < 0) return Error(KREPLAY_STATUS_ERROR, std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);  // NOLINT: child only
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));  // NOLINT
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "==KREPLAY== error: cannot run '%s': %s; check the application path\n",
                 argv[0], std::strerror(errno));
    _exit(127);
  }
  g_child = pid;
  struct sigaction sa {};
  sa.sa_handler = &forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  int status = 0;
  // After a stop signal was passed on, the application has a grace period to close its outputs
  // and die; one that does not (it ignores the signal, or hangs) is killed, so that kreplay never
  // outlives the signal for long and no process is left holding the GPU.
  const auto grace_ms =
      static_cast<uint64_t>(std::max<int64_t>(0, env::get_int("KREPLAY_STOP_GRACE_MS", 10000)));
  uint64_t stop_deadline = 0;
  bool killed = false;
  for (;;) {
    pid_t w = waitpid(pid, &status, g_stop_signal != 0 ? WNOHANG : 0);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      return Error(KREPLAY_STATUS_ERROR, std::string("waitpid: ") + std::strerror(errno));
    }
    if (g_stop_signal == 0) continue;
    if (stop_deadline == 0) stop_deadline = now_ns() + grace_ms * 1000000ull;
    if (!killed && now_ns() >= stop_deadline) {
      KR_NOTICE(
          "the application did not stop within {} ms of signal {}; killing it (its outputs "
          "hold what was flushed; KREPLAY_STOP_GRACE_MS sets the time)",
          grace_ms, static_cast<int>(g_stop_signal));
      kill(pid, SIGKILL);
      killed = true;
    }
    usleep(20000);
  }
  g_child = 0;
  RunResult r;
  r.pid = pid;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
    KR_NOTICE("the application was killed by signal {} ({})", WTERMSIG(status),
              strsignal(WTERMSIG(status)));
  }
  return r;
}

// The database a run wrote, when its name can be known from the outside.
std::optional<std::string> run_database(const ToolConfig& config, pid_t pid) {
  if (std::find(config.output.formats.begin(), config.output.formats.end(), OutputFormat::kSqlite) ==
      config.output.formats.end())
    return std::nullopt;
  auto ctx = ExpansionContext::current();
  ctx.pid = pid;
  ctx.ppid = getpid();
  auto base = output_base_path(config.output, ctx);
  if (!base.ok()) return std::nullopt;
  std::string path = *base + "_results.db";
  if (!fs::exists(path)) return std::nullopt;
  return path;
}

// The tool cannot know the application's exit status (it runs inside it): record it here.
void record_exit_code(const std::string& db, int code) {
  sqlite3* h = nullptr;
  if (sqlite3_open(db.c_str(), &h) == SQLITE_OK) {
    std::string sql = fmt::format("UPDATE run SET exit_code = {};", code);
    sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr);
  }
  sqlite3_close(h);
}

int run_plan(const RunPlan& plan) {
  fs::path lib = lib_dir();
  fs::path tool = lib / "libkreplay_tool.so";
  if (!fs::exists(tool)) {
    return fail(fmt::format("cannot find the profiler tool at {}; kreplay's lib/ folder must sit "
                            "next to its bin/ folder",
                            tool.string()));
  }
  fs::path cuda = lib / "libkreplay_cuda.so";
  int last_code = 0;
  pid_t first_pid = 0;
  std::vector<std::string> databases;
  for (size_t k = 0; k < plan.runs.size(); ++k) {
    const auto& run = plan.runs[k];
    std::vector<std::pair<std::string, std::string>> env;
    std::string tools = tool.string();
    if (const char* existing = std::getenv("KREPLAY_TOOL_LIBRARIES"); existing && *existing)  // NOLINT
      tools += std::string(":") + existing;
    env.emplace_back("KREPLAY_TOOL_LIBRARIES", tools);
    std::string config_file;
    if (auto inline_value = tool_config_inline_value(run.config)) {
      env.emplace_back(kToolConfigEnv, *inline_value);
    } else {
      config_file = fmt::format("{}/kreplay-{}-{}.json", fs::temp_directory_path().string(), getpid(), k);
      std::ofstream(config_file) << serialize_tool_config(run.config);
      env.emplace_back(kToolConfigEnv, "@" + config_file);
    }
    if (fs::exists(cuda)) {
      const char* current = std::getenv("CUDA_INJECTION64_PATH");  // NOLINT
      if (current && *current && cuda.string() != current) {
        KR_WARN("CUDA_INJECTION64_PATH was '{}'; kreplay replaces it with its own library", current);
      }
      env.emplace_back("CUDA_INJECTION64_PATH", cuda.string());
      // NVTX range markers and NVTX selection reach kreplay through NVTX's injection hook.
      const auto& f = run.config.filters;
      if (run.config.range_markers.rfind("nvtx:", 0) == 0 || !f.nvtx_include.empty() ||
          !f.nvtx_exclude.empty()) {
        const char* current = std::getenv("NVTX_INJECTION64_PATH");  // NOLINT
        if (current && *current && cuda.string() != current) {
          KR_WARN("NVTX_INJECTION64_PATH was '{}'; kreplay replaces it with its own library to "
                  "follow NVTX ranges",
                  current);
        }
        env.emplace_back("NVTX_INJECTION64_PATH", cuda.string());
      }
    }
    if (!plan.log_level.empty()) env.emplace_back("KREPLAY_LOG_LEVEL", plan.log_level);
    if (k == 0 && run.config.range_markers == "cuda-profiler") {
      KR_NOTICE("--range-markers cuda-profiler profiles the launches between cudaProfilerStart "
                "and cudaProfilerStop: the same selection as --profile-from-start off, which "
                "works in every replay mode");
    }
    // The application inherits kreplay's stderr: on a terminal the tool shows one progress line,
    // updated in place (tool/progress.hpp); on a file or pipe it shows none.
    if (isatty(STDERR_FILENO) && kreplay::log::enabled(kreplay::log::Level::kWarning))
      env.emplace_back("KREPLAY_PROGRESS", "tty");
    // Each process of the application in which the tool starts appends its pid here.
    const std::string status_file =
        fmt::format("{}/kreplay-{}-{}.status", fs::temp_directory_path().string(), getpid(), k);
    fs::remove(status_file);
    env.emplace_back("KREPLAY_TOOL_STATUS_FILE", status_file);
    if (plan.runs.size() > 1) KR_NOTICE("{}", run.label);
    auto result = run_application(plan.command, env);
    if (!config_file.empty()) fs::remove(config_file);
    std::error_code ec;
    const bool tool_ran = fs::exists(status_file, ec) && fs::file_size(status_file, ec) > 0;
    fs::remove(status_file, ec);
    if (!result.ok()) return fail(result.status().message());
    if (!tool_ran && result->exit_code != 127 && g_stop_signal == 0) {
      KR_WARN("'{}' finished without kreplay starting in any of its processes (none initialised "
              "CUDA, or kreplay could not attach): nothing was collected; profile the program that "
              "runs the GPU work",
              plan.command.front());
    }
    last_code = result->exit_code;
    if (k == 0) first_pid = result->pid;
    if (auto db = run_database(run.config, result->pid)) {
      record_exit_code(*db, result->exit_code);
      databases.push_back(*db);
    }
    if (result->exit_code == 127 && k == 0) return 127;  // the application could not be started
    if (g_stop_signal != 0) {
      KR_NOTICE("stopped by signal {}; {} of {} runs done", static_cast<int>(g_stop_signal), k + 1,
                plan.runs.size());
      return 128 + g_stop_signal;
    }
  }
  if (plan.runs.size() > 1 && databases.size() > 1) {
    // Application replay: one database holding every run, each row knowing its pass. It goes
    // where a single run's database would: the user's directory, named after the first run.
    ToolConfig top = plan.runs.front().config;
    const std::string suffix = "/pass_1";
    if (top.output.directory.size() > suffix.size() &&
        top.output.directory.compare(top.output.directory.size() - suffix.size(), suffix.size(),
                                     suffix) == 0) {
      top.output.directory.resize(top.output.directory.size() - suffix.size());
    }
    if (!top.output.file.empty() && top.output.file.front() == '/') {
      size_t at = top.output.file.rfind(suffix + "/");
      if (at != std::string::npos) top.output.file.erase(at, suffix.size());
    }
    auto ctx = ExpansionContext::current();
    ctx.pid = first_pid;
    ctx.ppid = getpid();  // the applications' parent, as in run_database()
    auto base = output_base_path(top.output, ctx);
    std::string merged = base.ok() ? *base + "_results.db" : "kreplay_results.db";
    fs::create_directories(fs::path(merged).parent_path());
    Status s = output::merge_sqlite(databases, merged);
    if (s.ok()) {
      KR_NOTICE("all {} runs in one database: {}", plan.runs.size(), merged);
    } else {
      KR_ERROR("merging the runs' databases failed: {}", s.message());
    }
  }
  return last_code;
}

}  // namespace
}  // namespace kreplay::cli

int main(int argc, char** argv) {
  using namespace kreplay::cli;  // NOLINT
  // kreplay report RUN.db ... / convert RUN.db ... / merge DIR|FILES...: on results databases.
  if (argc > 1 && (std::strcmp(argv[1], "report") == 0 || std::strcmp(argv[1], "convert") == 0 ||
                   std::strcmp(argv[1], "merge") == 0)) {
    return kreplay::report::run_command(argc - 1, argv + 1);
  }
  auto options = parse_command_line(argc, argv);
  if (!options.ok()) return fail(options.status().message());
  auto plan = make_run_plan(*options);
  if (!plan.ok()) return fail(plan.status().message());
  kreplay::log::Level level;
  if (kreplay::log::parse_level(plan->log_level, &level)) kreplay::log::set_level(level);
  for (const auto& w : plan->warnings) KR_WARN("{}", w);
  for (const auto& n : plan->notes) KR_NOTICE("{}", n);
  switch (plan->action) {
    case PlanAction::kHelp:
      std::fputs(plan->help_text.c_str(), stdout);
      return 0;
    case PlanAction::kVersion:
      std::printf("%s\n", version_text().c_str());
      return 0;
    case PlanAction::kListAvail:
      return list_avail(plan->chip);
    case PlanAction::kPmcCheck:
      return pmc_check(plan->chip, plan->pmc_check);
    case PlanAction::kListSets:
    case PlanAction::kListSections:
      return list_catalog(*plan);
    case PlanAction::kRun:
      return run_plan(*plan);
  }
  return 0;
}
