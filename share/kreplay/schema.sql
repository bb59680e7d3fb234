-- kreplay results database (<dir>/<stem>_results.db), schema version 3 (3 added the per-pass
-- service tables pc_samples, sass_metrics, pm_samples and sass, and their views).
--
-- This file is the source of truth. It is embedded into the writer at build time and run on every
-- new database; metadata.schema_version holds kSchemaVersion (src/output/records.hpp).
--
-- Conventions
--   * app_pass: the application-replay pass (1..N, --replay-mode application) or 0. Every table
--     carries it and every key starts with it, so merge_sqlite can put the pass_N databases of one
--     run into one file without collisions.
--   * replay_pass: the kernel-replay pass inside one logical dispatch, 0-based. Keys of pass-level
--     tables include it: a dispatch has one row per executed pass in `passes`, and a counter
--     collected on several passes has one row per pass in `counters` (never summed, never
--     dropped).
--   * *_ns columns are nanoseconds of the SDK clock (CLOCK_MONOTONIC), except run.start_unix_ns
--     (wall clock). Unsigned 64-bit values are stored as INTEGER; a value >= 2^63 reads back as
--     its two's-complement negative.
--   * counters.value is NULL when the measured value was NaN.
--   * Plain tables (no STRICT, no JSONB) so older SQLite readers open the file.
--   * seq: the order in which the writer received the record, counted over every record table
--     (1, 2, ... per app_pass). `kreplay convert` replays a database through the other writers in
--     this order, so its CSV, JSON and Perfetto files are those the run would have written. NULL
--     in databases written before the column was added (the schema version did not change:
--     readers that do not know the column are not affected).
--
-- Views with one column per counter cannot be declared here because the counter set belongs to
-- the run. The writer creates them when the run begins and refreshes them when new counter names
-- appear and at the end of the run; merge_sqlite recreates them. Their shape:
--
--   dispatch_counters: one row per dispatch.
--     app_pass, dispatch_id, agent_id, stream_id, kernel_id, kernel_name, outcome, reason,
--     passes_executed, start_ns, end_ns,
--     duration_ns  (mean duration of the dispatch's passes; end_ns - start_ns when it has none),
--     then one REAL column per counter, named after the counter. When a counter was collected on
--     several passes, the column shows the value of the LOWEST replay_pass that collected it
--     (metadata.counter_value_pick says so).
--   kernel_summary: one row per (app_pass, kernel_id), from dispatch_counters.
--     app_pass, kernel_id, kernel_name, launches, passes, total_ns, avg_ns, min_ns, max_ns,
--     then one column per counter: its average over the launches that have a value.
--
-- Column order of the counter columns: RunInfo::counter_names (request order), then names first
-- seen in records, in order of arrival (merge_sqlite: each run's counter_names by app_pass, then
-- the remaining names alphabetically).

CREATE TABLE metadata (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);

-- One row per application run (per app_pass). Written at begin; the end/summary columns are NULL
-- until the run finishes, so a NULL end_ns marks a run that was killed.
CREATE TABLE run (
  app_pass           INTEGER PRIMARY KEY NOT NULL,
  app_pass_count     INTEGER NOT NULL,
  kreplay_version    TEXT NOT NULL,
  command            TEXT NOT NULL,  -- JSON array: the application's argv
  hostname           TEXT NOT NULL,
  pid                INTEGER NOT NULL,
  replay_mode        TEXT NOT NULL,  -- kernel | application | range
  counter_names      TEXT NOT NULL,  -- JSON array, request order
  environment        TEXT NOT NULL,  -- JSON object
  options            TEXT NOT NULL,  -- JSON object: effective options
  start_ns           INTEGER NOT NULL,
  start_unix_ns      INTEGER NOT NULL,
  end_ns             INTEGER,
  exit_code          INTEGER,        -- application's exit status (128+signal when killed)
  launches           INTEGER,        -- logical launches seen
  replayed           INTEGER,
  declined           INTEGER,
  not_selected       INTEGER,        -- filtered out at CONFIG
  passes             INTEGER,        -- executed passes, all dispatches
  declined_by_reason TEXT,           -- JSON object: reason -> count
  counter_passes_lost INTEGER,       -- passes whose counters could not be read
  -- Many GPUs and ranks: added without a version change (older databases lack them).
  rank               INTEGER DEFAULT NULL,  -- MPI/torchrun rank (RANK, OMPI_COMM_WORLD_RANK,
                                            -- PMI_RANK, SLURM_PROCID, ...); NULL: none known
  local_rank         INTEGER DEFAULT NULL,  -- rank within the node (LOCAL_RANK, ...)
  devices_used       TEXT DEFAULT NULL,     -- JSON array: device_index of every device that ran
                                            -- a launch (set at the end of the run)
  -- Write-bounded snapshots: added without a version change (older databases lack them). The
  -- snapshot storage kreplay held (kreplay_query_replay_storage at the end of the run, each
  -- device's peak, summed over the devices); NULL until the run finishes.
  snapshot_device_peak_bytes INTEGER DEFAULT NULL,  -- the most device memory held at once
  snapshot_host_peak_bytes   INTEGER DEFAULT NULL,  -- the most pinned host memory held at once
  snapshot_storage_releases  INTEGER DEFAULT NULL   -- times it was given back to the application
);

CREATE TABLE devices (
  app_pass             INTEGER NOT NULL,
  agent_id             INTEGER NOT NULL,
  type                 TEXT NOT NULL,  -- cuda | host
  device_index         INTEGER NOT NULL,
  name                 TEXT NOT NULL,
  chip                 TEXT NOT NULL,
  uuid                 TEXT NOT NULL,
  memory_bytes         INTEGER NOT NULL,
  multiprocessor_count INTEGER NOT NULL,
  cc_major             INTEGER NOT NULL,
  cc_minor             INTEGER NOT NULL,
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, agent_id)
);

CREATE TABLE kernels (
  app_pass       INTEGER NOT NULL,
  kernel_id      INTEGER NOT NULL,
  agent_id       INTEGER NOT NULL,
  code_object_id INTEGER NOT NULL,
  mangled_name   TEXT NOT NULL,
  demangled_name TEXT NOT NULL,
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, kernel_id)
);

-- One row per logical dispatch (replayed, declined or not_requested), written after its last pass.
CREATE TABLE dispatches (
  app_pass             INTEGER NOT NULL,
  dispatch_id          INTEGER NOT NULL,
  agent_id             INTEGER NOT NULL,
  stream_id            INTEGER NOT NULL,
  kernel_id            INTEGER NOT NULL,
  correlation_id       INTEGER NOT NULL,
  thread_id            INTEGER NOT NULL,
  grid_x               INTEGER NOT NULL,  -- blocks
  grid_y               INTEGER NOT NULL,
  grid_z               INTEGER NOT NULL,
  block_x              INTEGER NOT NULL,  -- threads
  block_y              INTEGER NOT NULL,
  block_z              INTEGER NOT NULL,
  cluster_x            INTEGER NOT NULL,  -- blocks
  cluster_y            INTEGER NOT NULL,
  cluster_z            INTEGER NOT NULL,
  dynamic_shared_bytes INTEGER NOT NULL,
  static_shared_bytes  INTEGER NOT NULL,
  registers            INTEGER NOT NULL,  -- per thread
  outcome              TEXT NOT NULL,     -- replayed | declined | not_requested
  reason               TEXT NOT NULL,     -- '' or the decline reason
  passes_requested     INTEGER NOT NULL,  -- 0 = indefinite
  passes_executed      INTEGER NOT NULL,
  bytes_snapshotted    INTEGER NOT NULL,
  bytes_restored       INTEGER NOT NULL,
  snapshot_ns          INTEGER NOT NULL,  -- duration
  restore_ns           INTEGER NOT NULL,  -- duration, summed over restores
  start_ns             INTEGER NOT NULL,  -- first pass start
  end_ns               INTEGER NOT NULL,  -- last pass end
  graph_id             INTEGER NOT NULL DEFAULT 0,  -- the CUDA graph that launched it (0: none)
  graph_node           INTEGER NOT NULL DEFAULT 0,  -- a kernel node's place in its graph's order
  divergence_checked   INTEGER NOT NULL DEFAULT 0,  -- 1: --check-divergence compared its passes
  diverged_passes      INTEGER NOT NULL DEFAULT 0,  -- passes whose memory differed from pass 0's
  -- Write-bounded snapshots: added without a version change (older databases lack them). A
  -- range's are on its first kept launch, as its bytes_snapshotted is.
  bytes_changed        INTEGER NOT NULL DEFAULT 0,  -- bytes of the chunks its own pass changed
                                                    -- (the digests' count; 0: not measured)
  snapshot_mode        TEXT NOT NULL DEFAULT '',    -- full | write_set | '' (nothing saved)
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, dispatch_id)
);

-- One row per executed pass.
CREATE TABLE passes (
  app_pass    INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  replay_pass INTEGER NOT NULL,
  agent_id    INTEGER NOT NULL,
  stream_id   INTEGER NOT NULL,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  counter_status TEXT NOT NULL DEFAULT '',  -- '' none asked | ok | lost (CUPTI failed)
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, dispatch_id, replay_pass)
) WITHOUT ROWID;

-- One row per counter value per pass. The key orders a dispatch's values of one counter by pass.
CREATE TABLE counters (
  app_pass    INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  name        TEXT NOT NULL,
  replay_pass INTEGER NOT NULL,
  value       REAL,
  agent_id    INTEGER NOT NULL,
  kernel_id   INTEGER NOT NULL,
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, dispatch_id, name, replay_pass)
) WITHOUT ROWID;

CREATE TABLE allocations (
  id           INTEGER PRIMARY KEY,  -- arrival order
  app_pass     INTEGER NOT NULL,
  agent_id     INTEGER NOT NULL,
  operation    TEXT NOT NULL,        -- alloc | free
  kind         TEXT NOT NULL,        -- device | pool | virtual | managed | host_mapped | module_global
  address      INTEGER NOT NULL,
  size         INTEGER NOT NULL,
  timestamp_ns INTEGER NOT NULL,
  seq INTEGER  -- arrival order (see the top)
);

-- Snapshot and restore intervals of replay windows.
CREATE TABLE replay_phases (
  id          INTEGER PRIMARY KEY,  -- arrival order
  app_pass    INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  agent_id    INTEGER NOT NULL,
  stream_id   INTEGER NOT NULL,
  phase       TEXT NOT NULL,        -- snapshot | restore
  after_pass  INTEGER NOT NULL,     -- restore: the pass it follows; snapshot: 0
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  bytes       INTEGER NOT NULL,
  seq INTEGER  -- arrival order (see the top)
);
CREATE INDEX replay_phases_by_dispatch ON replay_phases (app_pass, dispatch_id);

-- Per-pass services (include/kreplay/services.h; kreplay --pc-sampling, --sass-metrics,
-- --pm-sampling). An instruction is (agent_id, function, pc_offset): `function` is the mangled
-- name of the function that holds it, `pc_offset` its offset there; `sass` has its text and
-- source line. Each row belongs to the pass that collected it.

-- PC sampling: samples of one instruction under one stall reason.
CREATE TABLE pc_samples (
  app_pass     INTEGER NOT NULL,
  dispatch_id  INTEGER NOT NULL,
  replay_pass  INTEGER NOT NULL,
  function     TEXT NOT NULL,
  pc_offset    INTEGER NOT NULL,
  stall_reason TEXT NOT NULL,
  samples      INTEGER NOT NULL,
  agent_id     INTEGER NOT NULL,
  kernel_id    INTEGER NOT NULL,
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, dispatch_id, replay_pass, function, pc_offset, stall_reason)
) WITHOUT ROWID;

-- SASS metrics: the exact count of one metric at one instruction.
CREATE TABLE sass_metrics (
  app_pass    INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  replay_pass INTEGER NOT NULL,
  function    TEXT NOT NULL,
  pc_offset   INTEGER NOT NULL,
  metric      TEXT NOT NULL,
  value       REAL,
  agent_id    INTEGER NOT NULL,
  kernel_id   INTEGER NOT NULL,
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, dispatch_id, replay_pass, function, pc_offset, metric)
) WITHOUT ROWID;

-- PM sampling: one metric over one interval of a pass; timestamp_ns is the interval's end.
CREATE TABLE pm_samples (
  app_pass     INTEGER NOT NULL,
  dispatch_id  INTEGER NOT NULL,
  replay_pass  INTEGER NOT NULL,
  metric       TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,
  value        REAL,
  agent_id     INTEGER NOT NULL,
  kernel_id    INTEGER NOT NULL,
  seq INTEGER,  -- arrival order (see the top)
  PRIMARY KEY (app_pass, dispatch_id, replay_pass, metric, timestamp_ns)
) WITHOUT ROWID;

-- The instructions the services named: text, source file and line (0 and '' when unknown).
CREATE TABLE sass (
  app_pass    INTEGER NOT NULL,
  agent_id    INTEGER NOT NULL,
  function    TEXT NOT NULL,
  pc_offset   INTEGER NOT NULL,
  instruction TEXT NOT NULL,
  source_file TEXT NOT NULL,
  source_line INTEGER NOT NULL,
  PRIMARY KEY (app_pass, agent_id, function, pc_offset)
) WITHOUT ROWID;

-- PC samples summed per kernel, source line and stall reason (over every dispatch and pass).
CREATE VIEW pc_samples_by_line AS
SELECT p.app_pass, p.kernel_id, k.demangled_name AS kernel_name, s.source_file, s.source_line,
       p.stall_reason, SUM(p.samples) AS samples
FROM pc_samples p
LEFT JOIN sass s ON s.app_pass = p.app_pass AND s.agent_id = p.agent_id
  AND s.function = p.function AND s.pc_offset = p.pc_offset
LEFT JOIN kernels k ON k.app_pass = p.app_pass AND k.kernel_id = p.kernel_id
GROUP BY p.app_pass, p.kernel_id, s.source_file, s.source_line, p.stall_reason;

-- PC samples summed per kernel and stall reason.
CREATE VIEW pc_samples_by_kernel AS
SELECT p.app_pass, p.kernel_id, k.demangled_name AS kernel_name, p.stall_reason,
       SUM(p.samples) AS samples
FROM pc_samples p
LEFT JOIN kernels k ON k.app_pass = p.app_pass AND k.kernel_id = p.kernel_id
GROUP BY p.app_pass, p.kernel_id, p.stall_reason;

-- SASS metrics summed per kernel, source line and metric (over every dispatch and pass).
CREATE VIEW sass_metrics_by_line AS
SELECT m.app_pass, m.kernel_id, k.demangled_name AS kernel_name, s.source_file, s.source_line,
       m.metric, SUM(m.value) AS value
FROM sass_metrics m
LEFT JOIN sass s ON s.app_pass = m.app_pass AND s.agent_id = m.agent_id
  AND s.function = m.function AND s.pc_offset = m.pc_offset
LEFT JOIN kernels k ON k.app_pass = m.app_pass AND k.kernel_id = m.kernel_id
GROUP BY m.app_pass, m.kernel_id, s.source_file, s.source_line, m.metric;

-- SASS metrics summed per kernel and metric.
CREATE VIEW sass_metrics_by_kernel AS
SELECT m.app_pass, m.kernel_id, k.demangled_name AS kernel_name, m.metric, SUM(m.value) AS value
FROM sass_metrics m
LEFT JOIN kernels k ON k.app_pass = m.app_pass AND k.kernel_id = m.kernel_id
GROUP BY m.app_pass, m.kernel_id, m.metric;

-- Long layout, one row per counter value per pass, with the dispatch and pass it belongs to
-- (the SQL twin of counter_collection.csv).
CREATE VIEW counter_collection AS
SELECT c.app_pass, c.dispatch_id, c.replay_pass, c.agent_id, d.stream_id, c.kernel_id,
       k.demangled_name AS kernel_name, c.name AS counter_name, c.value AS counter_value,
       p.start_ns, p.end_ns
FROM counters c
LEFT JOIN dispatches d ON d.app_pass = c.app_pass AND d.dispatch_id = c.dispatch_id
LEFT JOIN kernels k ON k.app_pass = c.app_pass AND k.kernel_id = c.kernel_id
LEFT JOIN passes p
  ON p.app_pass = c.app_pass AND p.dispatch_id = c.dispatch_id AND p.replay_pass = c.replay_pass;

-- Trusting a replay: did every pass of a launch measure the same work? Added, like
-- dispatches.divergence_checked and diverged_passes, without a version change (older readers are
-- not affected; older databases lack them).

-- One row per launch with two or more timed passes: the spread of its pass durations,
-- 100 * (max - min) / min; flagged = 1 when it exceeds 10% (a pass that did not look like the others:
-- a different cache state, a clock change, other work on the GPU).
CREATE VIEW pass_spread AS
SELECT p.app_pass, p.dispatch_id, d.kernel_id, k.demangled_name AS kernel_name,
       COUNT(*) AS passes, MIN(p.end_ns - p.start_ns) AS min_ns, MAX(p.end_ns - p.start_ns) AS max_ns,
       100.0 * (MAX(p.end_ns - p.start_ns) - MIN(p.end_ns - p.start_ns)) / MIN(p.end_ns - p.start_ns)
         AS spread_pct,
       CASE WHEN 100.0 * (MAX(p.end_ns - p.start_ns) - MIN(p.end_ns - p.start_ns))
                 / MIN(p.end_ns - p.start_ns) > 10.0 THEN 1 ELSE 0 END AS flagged
FROM passes p
LEFT JOIN dispatches d ON d.app_pass = p.app_pass AND d.dispatch_id = p.dispatch_id
LEFT JOIN kernels k ON k.app_pass = d.app_pass AND k.kernel_id = d.kernel_id
WHERE p.end_ns > p.start_ns
GROUP BY p.app_pass, p.dispatch_id
HAVING COUNT(*) > 1;

-- Per kernel: its launches with two or more timed passes, their mean and largest spread, and how
-- many were flagged.
CREATE VIEW kernel_pass_spread AS
SELECT app_pass, kernel_id, kernel_name, COUNT(*) AS launches, AVG(spread_pct) AS mean_spread_pct,
       MAX(spread_pct) AS max_spread_pct, SUM(flagged) AS flagged_launches
FROM pass_spread
GROUP BY app_pass, kernel_id;

-- A counter collected on several passes of one launch (requested in several groups): its values.
-- For counts (events, not durations or rates) min_value and max_value must be equal.
CREATE VIEW counter_pass_values AS
SELECT c.app_pass, c.dispatch_id, c.kernel_id, c.name AS counter_name, COUNT(*) AS passes,
       MIN(c.value) AS min_value, MAX(c.value) AS max_value
FROM counters c
GROUP BY c.app_pass, c.dispatch_id, c.name
HAVING COUNT(*) > 1;

-- Launches whose passes left different memory (--check-divergence): they did not measure the same
-- work on every pass (float atomics in another order, a race, a kernel that reads a clock).
CREATE VIEW diverged_dispatches AS
SELECT d.app_pass, d.dispatch_id, d.kernel_id, k.demangled_name AS kernel_name, d.passes_executed,
       d.diverged_passes
FROM dispatches d
LEFT JOIN kernels k ON k.app_pass = d.app_pass AND k.kernel_id = d.kernel_id
WHERE d.diverged_passes > 0;

-- @rank-views
-- A database of several ranks (`kreplay merge DIR|FILES... -o all.db`). Every table has a rank
-- column first (run.rank: the rank the merge gave the input: its own rank, else the lowest rank no
-- input had) and every key starts with it; the views above join and group on it too. The
-- statements from the line "-- @rank-views" on are run only on such a database; they compare
-- the ranks.

-- Per kernel and rank: launches (dispatches of application replay's runs count once) and time.
CREATE VIEW kernel_time_by_rank AS
SELECT kernel_name, rank, COUNT(DISTINCT dispatch_id) AS launches, AVG(duration_ns) AS avg_ns,
       AVG(duration_ns) * COUNT(DISTINCT dispatch_id) AS total_ns
FROM dispatch_counters
GROUP BY kernel_name, rank;

-- Per kernel: how its time differs between the ranks; imbalance_pct = 100 * (slowest - fastest)
-- / slowest, over the ranks that launched it.
CREATE VIEW kernel_rank_balance AS
SELECT kernel_name, COUNT(*) AS ranks, SUM(launches) AS launches, MIN(total_ns) AS min_total_ns,
       MAX(total_ns) AS max_total_ns, AVG(total_ns) AS mean_total_ns,
       CASE WHEN MAX(total_ns) > 0 THEN 100.0 * (MAX(total_ns) - MIN(total_ns)) / MAX(total_ns)
       END AS imbalance_pct
FROM kernel_time_by_rank
GROUP BY kernel_name;

-- Per kernel, counter and rank: the counter over the rank's launches (each launch's value on the
-- lowest pass that collected it, as in dispatch_counters). Choose counters with WHERE
-- counter_name IN (...).
CREATE VIEW counter_by_rank AS
WITH first_pass AS (
  SELECT rank, app_pass, dispatch_id, kernel_id, name, value, MIN(replay_pass) AS replay_pass
  FROM counters GROUP BY rank, app_pass, dispatch_id, name)
SELECT COALESCE(NULLIF(k.demangled_name, ''), NULLIF(k.mangled_name, ''),
                'kernel ' || f.kernel_id) AS kernel_name,
       f.name AS counter_name, f.rank, COUNT(*) AS launches, AVG(f.value) AS mean_value,
       MIN(f.value) AS min_value, MAX(f.value) AS max_value
FROM first_pass f
LEFT JOIN kernels k ON k.rank = f.rank AND k.app_pass = f.app_pass AND k.kernel_id = f.kernel_id
GROUP BY 1, f.name, f.rank;
