PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE metadata (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);
INSERT INTO metadata VALUES('schema_version','1');
INSERT INTO metadata VALUES('format','kreplay results');
INSERT INTO metadata VALUES('timestamp_clock','CLOCK_MONOTONIC nanoseconds (run.start_unix_ns: wall clock)');
INSERT INTO metadata VALUES('counter_value_pick','dispatch_counters and kernel_summary show, per dispatch, the value of the lowest replay_pass that collected the counter; table counters keeps every pass');
INSERT INTO metadata VALUES('kreplay_version','0.1.0');
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
  declined_by_reason TEXT            -- JSON object: reason -> count
);
INSERT INTO run VALUES(0,0,'0.1.0','["/work/wt14/build/bin/kreplay-sample-app"]','vm',4121,'kernel','["ops","bytes_read","bytes_written","threads_launched","duration_ns","blocks_launched"]','{"CUDA_INJECTION64_PATH":"/work/wt14/build/lib/libkreplay_cuda.so","KREPLAY_TOOL_LIBRARIES":"/work/wt14/build/lib/libkreplay_tool.so"}','{"origin":"command line","replay_memory":"all"}',2348366881965,1796155499891793980,2348413583256,0,10,10,0,0,30,'{}');
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
  PRIMARY KEY (app_pass, agent_id)
);
INSERT INTO devices VALUES(0,1,'host',0,'kreplay host device 0','HOSTDEV','HOST-00000000',1073741824,1,0,0);
CREATE TABLE kernels (
  app_pass       INTEGER NOT NULL,
  kernel_id      INTEGER NOT NULL,
  agent_id       INTEGER NOT NULL,
  code_object_id INTEGER NOT NULL,
  mangled_name   TEXT NOT NULL,
  demangled_name TEXT NOT NULL,
  PRIMARY KEY (app_pass, kernel_id)
);
INSERT INTO kernels VALUES(0,1,1,1,'_Z9scale_addPfffj','scale_add(float*, float, float, unsigned int)');
INSERT INTO kernels VALUES(0,2,1,1,'_Z10sum_reducePKjPyj','sum_reduce(unsigned int const*, unsigned long long*, unsigned int)');
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
  PRIMARY KEY (app_pass, dispatch_id)
);
INSERT INTO dispatches VALUES(0,1,1,2,1,1,4121,8,1,1,128,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,8008,19459,9665,2348412085487,2348412271221);
INSERT INTO dispatches VALUES(0,2,1,3,2,2,4121,16,1,1,256,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,24,8103,3606,2348412413831,2348412576424);
INSERT INTO dispatches VALUES(0,3,1,2,1,3,4121,8,1,1,128,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,8008,5020,3259,2348412626300,2348412659063);
INSERT INTO dispatches VALUES(0,4,1,2,1,4,4121,8,1,1,128,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,8008,3612,3037,2348412675853,2348412706498);
INSERT INTO dispatches VALUES(0,5,1,3,2,5,4121,16,1,1,256,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,24,3511,3086,2348412744465,2348412864058);
INSERT INTO dispatches VALUES(0,6,1,2,1,6,4121,8,1,1,128,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,8008,3974,3063,2348412905071,2348412939910);
INSERT INTO dispatches VALUES(0,7,1,3,2,7,4121,16,1,1,256,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,24,3529,3145,2348412977370,2348413097441);
INSERT INTO dispatches VALUES(0,8,1,2,1,8,4121,8,1,1,128,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,8008,4240,3138,2348413137236,2348413169353);
INSERT INTO dispatches VALUES(0,9,1,3,2,9,4121,16,1,1,256,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,24,3579,3122,2348413206107,2348413325852);
INSERT INTO dispatches VALUES(0,10,1,2,1,10,4121,8,1,1,128,1,1,0,0,0,0,0,0,'replayed','',3,3,20396,8008,3962,3036,2348413365881,2348413396711);
CREATE TABLE passes (
  app_pass    INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  replay_pass INTEGER NOT NULL,
  agent_id    INTEGER NOT NULL,
  stream_id   INTEGER NOT NULL,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  PRIMARY KEY (app_pass, dispatch_id, replay_pass)
) WITHOUT ROWID;
INSERT INTO passes VALUES(0,1,0,1,2,2348412085487,2348412095836);
INSERT INTO passes VALUES(0,1,1,1,2,2348412247633,2348412253751);
INSERT INTO passes VALUES(0,1,2,1,2,2348412265481,2348412271221);
INSERT INTO passes VALUES(0,2,0,1,3,2348412413831,2348412425698);
INSERT INTO passes VALUES(0,2,1,1,3,2348412513556,2348412523672);
INSERT INTO passes VALUES(0,2,2,1,3,2348412566413,2348412576424);
INSERT INTO passes VALUES(0,3,0,1,2,2348412626300,2348412632361);
INSERT INTO passes VALUES(0,3,1,1,2,2348412641977,2348412647831);
INSERT INTO passes VALUES(0,3,2,1,2,2348412653253,2348412659063);
INSERT INTO passes VALUES(0,4,0,1,2,2348412675853,2348412681663);
INSERT INTO passes VALUES(0,4,1,1,2,2348412690194,2348412696071);
INSERT INTO passes VALUES(0,4,2,1,2,2348412701042,2348412706498);
INSERT INTO passes VALUES(0,5,0,1,3,2348412744465,2348412753923);
INSERT INTO passes VALUES(0,5,1,1,3,2348412800465,2348412809916);
INSERT INTO passes VALUES(0,5,2,1,3,2348412854551,2348412864058);
INSERT INTO passes VALUES(0,6,0,1,2,2348412905071,2348412910863);
INSERT INTO passes VALUES(0,6,1,1,2,2348412921535,2348412927397);
INSERT INTO passes VALUES(0,6,2,1,2,2348412934124,2348412939910);
INSERT INTO passes VALUES(0,7,0,1,3,2348412977370,2348412986768);
INSERT INTO passes VALUES(0,7,1,1,3,2348413034401,2348413044130);
INSERT INTO passes VALUES(0,7,2,1,3,2348413087605,2348413097441);
INSERT INTO passes VALUES(0,8,0,1,2,2348413137236,2348413143337);
INSERT INTO passes VALUES(0,8,1,1,2,2348413152062,2348413158068);
INSERT INTO passes VALUES(0,8,2,1,2,2348413163368,2348413169353);
INSERT INTO passes VALUES(0,9,0,1,3,2348413206107,2348413215825);
INSERT INTO passes VALUES(0,9,1,1,3,2348413262923,2348413273835);
INSERT INTO passes VALUES(0,9,2,1,3,2348413316479,2348413325852);
INSERT INTO passes VALUES(0,10,0,1,2,2348413365881,2348413371708);
INSERT INTO passes VALUES(0,10,1,1,2,2348413380221,2348413386008);
INSERT INTO passes VALUES(0,10,2,1,2,2348413390916,2348413396711);
CREATE TABLE counters (
  app_pass    INTEGER NOT NULL,
  dispatch_id INTEGER NOT NULL,
  name        TEXT NOT NULL,
  replay_pass INTEGER NOT NULL,
  value       REAL,
  agent_id    INTEGER NOT NULL,
  kernel_id   INTEGER NOT NULL,
  PRIMARY KEY (app_pass, dispatch_id, name, replay_pass)
) WITHOUT ROWID;
INSERT INTO counters VALUES(0,1,'blocks_launched',2,8.0,1,1);
INSERT INTO counters VALUES(0,1,'bytes_read',0,4004.0,1,1);
INSERT INTO counters VALUES(0,1,'bytes_written',1,4004.0,1,1);
INSERT INTO counters VALUES(0,1,'duration_ns',2,5740.0,1,1);
INSERT INTO counters VALUES(0,1,'ops',0,2000.0,1,1);
INSERT INTO counters VALUES(0,1,'threads_launched',1,1024.0,1,1);
INSERT INTO counters VALUES(0,2,'blocks_launched',2,16.0,1,2);
INSERT INTO counters VALUES(0,2,'bytes_read',0,16516.0,1,2);
INSERT INTO counters VALUES(0,2,'bytes_written',1,132.0,1,2);
INSERT INTO counters VALUES(0,2,'duration_ns',2,10011.0,1,2);
INSERT INTO counters VALUES(0,2,'ops',0,4096.0,1,2);
INSERT INTO counters VALUES(0,2,'threads_launched',1,4096.0,1,2);
INSERT INTO counters VALUES(0,3,'blocks_launched',2,8.0,1,1);
INSERT INTO counters VALUES(0,3,'bytes_read',0,4004.0,1,1);
INSERT INTO counters VALUES(0,3,'bytes_written',1,4004.0,1,1);
INSERT INTO counters VALUES(0,3,'duration_ns',2,5810.0,1,1);
INSERT INTO counters VALUES(0,3,'ops',0,2000.0,1,1);
INSERT INTO counters VALUES(0,3,'threads_launched',1,1024.0,1,1);
INSERT INTO counters VALUES(0,4,'blocks_launched',2,8.0,1,1);
INSERT INTO counters VALUES(0,4,'bytes_read',0,4004.0,1,1);
INSERT INTO counters VALUES(0,4,'bytes_written',1,4004.0,1,1);
INSERT INTO counters VALUES(0,4,'duration_ns',2,5456.0,1,1);
INSERT INTO counters VALUES(0,4,'ops',0,2000.0,1,1);
INSERT INTO counters VALUES(0,4,'threads_launched',1,1024.0,1,1);
INSERT INTO counters VALUES(0,5,'blocks_launched',2,16.0,1,2);
INSERT INTO counters VALUES(0,5,'bytes_read',0,16516.0,1,2);
INSERT INTO counters VALUES(0,5,'bytes_written',1,132.0,1,2);
INSERT INTO counters VALUES(0,5,'duration_ns',2,9507.0,1,2);
INSERT INTO counters VALUES(0,5,'ops',0,4096.0,1,2);
INSERT INTO counters VALUES(0,5,'threads_launched',1,4096.0,1,2);
INSERT INTO counters VALUES(0,6,'blocks_launched',2,8.0,1,1);
INSERT INTO counters VALUES(0,6,'bytes_read',0,4004.0,1,1);
INSERT INTO counters VALUES(0,6,'bytes_written',1,4004.0,1,1);
INSERT INTO counters VALUES(0,6,'duration_ns',2,5786.0,1,1);
INSERT INTO counters VALUES(0,6,'ops',0,2000.0,1,1);
INSERT INTO counters VALUES(0,6,'threads_launched',1,1024.0,1,1);
INSERT INTO counters VALUES(0,7,'blocks_launched',2,16.0,1,2);
INSERT INTO counters VALUES(0,7,'bytes_read',0,16516.0,1,2);
INSERT INTO counters VALUES(0,7,'bytes_written',1,132.0,1,2);
INSERT INTO counters VALUES(0,7,'duration_ns',2,9836.0,1,2);
INSERT INTO counters VALUES(0,7,'ops',0,4096.0,1,2);
INSERT INTO counters VALUES(0,7,'threads_launched',1,4096.0,1,2);
INSERT INTO counters VALUES(0,8,'blocks_launched',2,8.0,1,1);
INSERT INTO counters VALUES(0,8,'bytes_read',0,4004.0,1,1);
INSERT INTO counters VALUES(0,8,'bytes_written',1,4004.0,1,1);
INSERT INTO counters VALUES(0,8,'duration_ns',2,5985.0,1,1);
INSERT INTO counters VALUES(0,8,'ops',0,2000.0,1,1);
INSERT INTO counters VALUES(0,8,'threads_launched',1,1024.0,1,1);
INSERT INTO counters VALUES(0,9,'blocks_launched',2,16.0,1,2);
INSERT INTO counters VALUES(0,9,'bytes_read',0,16516.0,1,2);
INSERT INTO counters VALUES(0,9,'bytes_written',1,132.0,1,2);
INSERT INTO counters VALUES(0,9,'duration_ns',2,9373.0,1,2);
INSERT INTO counters VALUES(0,9,'ops',0,4096.0,1,2);
INSERT INTO counters VALUES(0,9,'threads_launched',1,4096.0,1,2);
INSERT INTO counters VALUES(0,10,'blocks_launched',2,8.0,1,1);
INSERT INTO counters VALUES(0,10,'bytes_read',0,4004.0,1,1);
INSERT INTO counters VALUES(0,10,'bytes_written',1,4004.0,1,1);
INSERT INTO counters VALUES(0,10,'duration_ns',2,5795.0,1,1);
INSERT INTO counters VALUES(0,10,'ops',0,2000.0,1,1);
INSERT INTO counters VALUES(0,10,'threads_launched',1,1024.0,1,1);
CREATE TABLE allocations (
  id           INTEGER PRIMARY KEY,  -- arrival order
  app_pass     INTEGER NOT NULL,
  agent_id     INTEGER NOT NULL,
  operation    TEXT NOT NULL,        -- alloc | free
  kind         TEXT NOT NULL,        -- device | pool | virtual | managed | host_mapped | module_global
  address      INTEGER NOT NULL,
  size         INTEGER NOT NULL,
  timestamp_ns INTEGER NOT NULL
);
INSERT INTO allocations VALUES(1,0,1,'alloc','module_global',94363706783488,4,2348408433744);
INSERT INTO allocations VALUES(2,0,1,'alloc','device',94363706849024,4000,2348408504576);
INSERT INTO allocations VALUES(3,0,1,'alloc','device',94363706853376,16384,2348408508064);
INSERT INTO allocations VALUES(4,0,1,'alloc','device',94363706797568,8,2348408511787);
INSERT INTO allocations VALUES(5,0,1,'free','device',94363706849024,4000,2348413544542);
INSERT INTO allocations VALUES(6,0,1,'free','device',94363706853376,16384,2348413552704);
INSERT INTO allocations VALUES(7,0,1,'free','device',94363706797568,8,2348413554209);
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
  bytes       INTEGER NOT NULL
);
INSERT INTO replay_phases VALUES(1,0,1,1,2,'snapshot',0,2348408655908,2348408675367,20396);
INSERT INTO replay_phases VALUES(2,0,1,1,2,'restore',0,2348412194068,2348412203525,4004);
INSERT INTO replay_phases VALUES(3,0,1,1,2,'restore',1,2348412261760,2348412261968,4004);
INSERT INTO replay_phases VALUES(4,0,2,1,3,'snapshot',0,2348412368590,2348412376693,20396);
INSERT INTO replay_phases VALUES(5,0,2,1,3,'restore',0,2348412462741,2348412466173,12);
INSERT INTO replay_phases VALUES(6,0,2,1,3,'restore',1,2348412546931,2348412547105,12);
INSERT INTO replay_phases VALUES(7,0,3,1,2,'snapshot',0,2348412618320,2348412623340,20396);
INSERT INTO replay_phases VALUES(8,0,3,1,2,'restore',0,2348412636885,2348412640018,4004);
INSERT INTO replay_phases VALUES(9,0,3,1,2,'restore',1,2348412651431,2348412651557,4004);
INSERT INTO replay_phases VALUES(10,0,4,1,2,'snapshot',0,2348412670540,2348412674152,20396);
INSERT INTO replay_phases VALUES(11,0,4,1,2,'restore',0,2348412685411,2348412688328,4004);
INSERT INTO replay_phases VALUES(12,0,4,1,2,'restore',1,2348412699375,2348412699495,4004);
INSERT INTO replay_phases VALUES(13,0,5,1,3,'snapshot',0,2348412717821,2348412721332,20396);
INSERT INTO replay_phases VALUES(14,0,5,1,3,'restore',0,2348412778270,2348412781222,12);
INSERT INTO replay_phases VALUES(15,0,5,1,3,'restore',1,2348412835437,2348412835571,12);
INSERT INTO replay_phases VALUES(16,0,6,1,2,'snapshot',0,2348412898028,2348412902002,20396);
INSERT INTO replay_phases VALUES(17,0,6,1,2,'restore',0,2348412916721,2348412919671,4004);
INSERT INTO replay_phases VALUES(18,0,6,1,2,'restore',1,2348412932675,2348412932788,4004);
INSERT INTO replay_phases VALUES(19,0,7,1,3,'snapshot',0,2348412953383,2348412956912,20396);
INSERT INTO replay_phases VALUES(20,0,7,1,3,'restore',0,2348413010271,2348413013291,12);
INSERT INTO replay_phases VALUES(21,0,7,1,3,'restore',1,2348413066879,2348413067004,12);
INSERT INTO replay_phases VALUES(22,0,8,1,2,'snapshot',0,2348413130205,2348413134445,20396);
INSERT INTO replay_phases VALUES(23,0,8,1,2,'restore',0,2348413147305,2348413150341,4004);
INSERT INTO replay_phases VALUES(24,0,8,1,2,'restore',1,2348413161308,2348413161410,4004);
INSERT INTO replay_phases VALUES(25,0,9,1,3,'snapshot',0,2348413182956,2348413186535,20396);
INSERT INTO replay_phases VALUES(26,0,9,1,3,'restore',0,2348413239576,2348413242569,12);
INSERT INTO replay_phases VALUES(27,0,9,1,3,'restore',1,2348413297792,2348413297921,12);
INSERT INTO replay_phases VALUES(28,0,10,1,2,'snapshot',0,2348413359536,2348413363498,20396);
INSERT INTO replay_phases VALUES(29,0,10,1,2,'restore',0,2348413375593,2348413378494,4004);
INSERT INTO replay_phases VALUES(30,0,10,1,2,'restore',1,2348413389368,2348413389503,4004);
CREATE INDEX replay_phases_by_dispatch ON replay_phases (app_pass, dispatch_id);
CREATE VIEW counter_collection AS
SELECT c.app_pass, c.dispatch_id, c.replay_pass, c.agent_id, d.stream_id, c.kernel_id,
       k.demangled_name AS kernel_name, c.name AS counter_name, c.value AS counter_value,
       p.start_ns, p.end_ns
FROM counters c
LEFT JOIN dispatches d ON d.app_pass = c.app_pass AND d.dispatch_id = c.dispatch_id
LEFT JOIN kernels k ON k.app_pass = c.app_pass AND k.kernel_id = c.kernel_id
LEFT JOIN passes p
  ON p.app_pass = c.app_pass AND p.dispatch_id = c.dispatch_id AND p.replay_pass = c.replay_pass;
CREATE VIEW dispatch_counters AS
WITH pass_time AS (
  SELECT app_pass, dispatch_id, AVG(end_ns - start_ns) AS avg_ns
  FROM passes GROUP BY app_pass, dispatch_id),
first_pass AS (
  SELECT app_pass, dispatch_id, name, value, MIN(replay_pass) AS replay_pass
  FROM counters GROUP BY app_pass, dispatch_id, name)
SELECT d.app_pass, d.dispatch_id, d.agent_id, d.stream_id, d.kernel_id,
  COALESCE(NULLIF(k.demangled_name, ''), NULLIF(k.mangled_name, ''),
           'kernel ' || d.kernel_id) AS kernel_name,
  d.outcome, d.reason, d.passes_executed, d.start_ns, d.end_ns,
  COALESCE(t.avg_ns, CAST(d.end_ns - d.start_ns AS REAL)) AS duration_ns,
  MAX(CASE WHEN f.name = 'ops' THEN f.value END) AS "ops",
  MAX(CASE WHEN f.name = 'bytes_read' THEN f.value END) AS "bytes_read",
  MAX(CASE WHEN f.name = 'bytes_written' THEN f.value END) AS "bytes_written",
  MAX(CASE WHEN f.name = 'threads_launched' THEN f.value END) AS "threads_launched",
  MAX(CASE WHEN f.name = 'duration_ns' THEN f.value END) AS "duration_ns#2",
  MAX(CASE WHEN f.name = 'blocks_launched' THEN f.value END) AS "blocks_launched"
FROM dispatches d
LEFT JOIN kernels k ON k.app_pass = d.app_pass AND k.kernel_id = d.kernel_id
LEFT JOIN pass_time t ON t.app_pass = d.app_pass AND t.dispatch_id = d.dispatch_id
LEFT JOIN first_pass f ON f.app_pass = d.app_pass AND f.dispatch_id = d.dispatch_id
GROUP BY d.app_pass, d.dispatch_id;
CREATE VIEW kernel_summary AS
SELECT app_pass, kernel_id, kernel_name, COUNT(*) AS launches,
  SUM(passes_executed) AS passes, SUM(duration_ns) AS total_ns, AVG(duration_ns) AS avg_ns,
  MIN(duration_ns) AS min_ns, MAX(duration_ns) AS max_ns,
  AVG("ops") AS "ops",
  AVG("bytes_read") AS "bytes_read",
  AVG("bytes_written") AS "bytes_written",
  AVG("threads_launched") AS "threads_launched",
  AVG("duration_ns#2") AS "duration_ns#2",
  AVG("blocks_launched") AS "blocks_launched"
FROM dispatch_counters GROUP BY app_pass, kernel_id;
COMMIT;
