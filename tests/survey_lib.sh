# survey_lib.sh — sourced by tests/cli/survey.sh and tests/cli/gpu_survey.sh (not a test itself).
#   sv_job FILE KERNEL RECEIVERS [X Y Z]
# writes the survey (3 arguments: no source position; RECEIVERS fixed or moving) or the single-shot
# job of the shot at X Y Z, from the caller's variables:
#   SV_HEAD     the grid, time, model, scheme, boundary and snapshot lines
#   SV_SHOTS    the survey's shots lines, without receivers = ...; };
#   SV_WAVELET  the source's wavelet = { ... };
#   SV_FIXED    the fixed receivers line
#   SV_OFFSETS  the moving spread: "dx dy dz" offsets from the shot, whole metres
# A moving spread's single-shot receivers are the shot plus the offsets, in whole metres too, so
# that both jobs place them at the very same doubles.
#   same A B        (tests/ckpt_lib.sh) traces and snapshots of two files bit for bit, else FAIL, fail=1
#   sv_both TAG N R1   run survey.cfg (N shots) by two worker threads into threads-TAG and, with
#                   MPI, by two ranks into mpi-TAG (the summary must name rank 1's worker R1, e.g.
#                   "r1 gpu0"); every shot file must equal the single-shot file s-TAG-I.h5
#   sv_init         mpi=1 when this build has MPI and mpirun is there (mpirun allowed as root, and
#                   to oversubscribe the cores)
source "$TW_SOURCE_DIR/tests/ckpt_lib.sh"
sv_init() {
  mpi=0
  if "$TORREWAVE" info | grep -q '^MPI: built' && command -v mpirun >/dev/null; then mpi=1; fi
  [ $mpi = 1 ] || echo "note: no MPI in this build or no mpirun: the MPI parts are skipped"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
}

sv_job() {
  local f=$1 k=$2 rm=$3
  {
    echo "$SV_HEAD"
    echo "solver = { kernel = \"$k\"; threads = 1; };"
    if [ $# = 3 ]; then
      echo "$SV_SHOTS receivers = \"$rm\"; };"
      echo "sources = ( { $SV_WAVELET } );"
    else
      echo "sources = ( { position = [$4, $5, $6]; $SV_WAVELET } );"
    fi
    if [ "$rm" = fixed ]; then
      echo "$SV_FIXED"
    else
      local x0=0 y0=0 z0=0 p="" o
      [ $# = 6 ] && x0=${4%.*} y0=${5%.*} z0=${6%.*}
      for o in "${SV_OFFSETS[@]}"; do
        set -- $o
        p="$p${p:+, }[$((x0 + $1)).0, $((y0 + $2)).0, $((z0 + $3)).0]"
      done
      echo "receivers = { interval = 2; points = ( $p ); };"
    fi
  } > "$f"
}


sv_both() {
  local tag=$1 n=$2 r1=$3 r i
  local runs=(threads)
  expect 0 "$n of $n shots run.*$n done, 0 failed" -- "$TORREWAVE" run survey.cfg -o "threads-$tag" --workers 2
  if [ $mpi = 1 ]; then
    expect 0 "$n of $n shots run.*$n done, 0 failed" -- mpirun -np 2 "$TORREWAVE" run survey.cfg -o "mpi-$tag"
    grep -q " $r1 " "$tmp/out" || { echo "FAIL: no worker '$r1' in the summary"; cat "$tmp/out"; fail=1; }
    runs+=(mpi)
  fi
  for r in "${runs[@]}"; do
    for ((i = 0; i < n; i++)); do same "$r-$tag/shot-0000$i.h5" "s-$tag-$i.h5" "$r $tag, shot $i"; done
  done
}
