"""Metric sets the GPU checks share (counters_check.py, traffic_check.py). TEN is the 16-metric set
of scripts/gpu-check.sh (TEN there): the memory system, 10 passes on GH100."""

TEN = ["gpu__time_duration.sum", "sm__cycles_elapsed.max", "smsp__inst_executed.sum",
       "dram__bytes_read.sum", "dram__bytes_write.sum",
       "sm__throughput.avg.pct_of_peak_sustained_elapsed",
       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
       "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct",
       "sm__warps_active.avg.pct_of_peak_sustained_active",
       "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
       "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum",
       "l1tex__throughput.avg.pct_of_peak_sustained_active",
       "lts__throughput.avg.pct_of_peak_sustained_elapsed",
       "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
