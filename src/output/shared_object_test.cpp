// The writers run from a dlopen()ed shared object (module_check.cpp), as they do inside the
// injected tool library, and the result is readable here.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "output/test_util.hpp"

namespace kreplay::output {
namespace {

TEST(SharedObjectTest, WritersRunFromADlopenedLibrary) {
  testing::TempDir dir;
  void* handle = dlopen(KREPLAY_OUTPUT_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  // SQLite and zlib stay inside the module: they must not interpose on the application's.
  EXPECT_EQ(dlsym(handle, "sqlite3_open_v2"), nullptr);
  EXPECT_EQ(dlsym(handle, "gzopen"), nullptr);
  using Check = int (*)(const char*);
  auto check = reinterpret_cast<Check>(dlsym(handle, "kreplay_output_module_check"));
  ASSERT_NE(check, nullptr) << dlerror();
  EXPECT_EQ(check(dir.path().c_str()), 0);
  dlclose(handle);

  sqlite3* db = nullptr;
  ASSERT_EQ(
      sqlite3_open_v2((dir / "module_results.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
      SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT c FROM dispatch_counters", -1, &stmt, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_double(stmt, 0), 42.0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_NE(testing::read_gzip(dir / "module_trace.json.gz").find("\"c\":42.0"), std::string::npos);
}

}  // namespace
}  // namespace kreplay::output
