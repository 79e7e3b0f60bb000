#!/usr/bin/env bash
# gpu-profile-diamond.sh — on a GPU machine, after a build: where a register tower's time goes.
# Times one configuration (test_gpu_diamond --bench GB ORDER DTS H [absorbing]) and profiles one
# launch of its tower kernel with Nsight Compute: stall reasons, issue slots, shared-memory and
# DRAM traffic, occupancy (docs/performance.md, gpu-diamond "Where the time goes").
#
# usage: scripts/gpu-profile-diamond.sh BUILD_DIR OUT_FILE "GB ORDER DTS H [absorbing]" ...
set -u -o pipefail
B=$1 OUTF=$2
shift 2
T=$B/tests/test_gpu_diamond
NCU_BIN=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /opt/nvidia/nsight-compute/ncu 2>/dev/null | head -1)
: >"$OUTF"
for cfg in "$@"; do
  echo "== $cfg" | tee -a "$OUTF"
  $T --bench $cfg | tee -a "$OUTF"
  [ -n "$NCU_BIN" ] || { echo "ncu: not found" | tee -a "$OUTF"; continue; }
  # skip the warm-up launch; one persistent launch is one block of H steps
  "$NCU_BIN" --clock-control none -k regex:tower_kernel -s 1 -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section LaunchStats \
    $T --bench $cfg >>"$OUTF" 2>&1 || echo "ncu sections failed (rc $?)" | tee -a "$OUTF"
  # every stall reason, per issued instruction; the instruction and shared-memory counts
  "$NCU_BIN" --clock-control none -k regex:tower_kernel -s 1 -c 1 \
    --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__inst_executed.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_ldgsts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active \
    $T --bench $cfg >>"$OUTF" 2>&1 || echo "ncu metrics failed (rc $?)" | tee -a "$OUTF"
done
