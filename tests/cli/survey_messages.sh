#!/usr/bin/env bash
# A survey's errors whole, and said once:
#   1. a job refused by its medium (a shot on the free surface), its file in a folder of 400
#      characters (the error names it twice, about 750 characters): `run` says the very error `check`
#      says, not its first 600 characters; under `mpirun -np 2` once (rank 0's: every rank knows it),
#      and the ranks end without MPI_Abort; a time step above the stability limit, and SEG-Y's
#      sampling, refused alike (exit 1, no directory: they ended as 7 shots "not run", exit 3);
#   2. an output directory of over 1023 characters (six folders of 200): `check` and `run` refuse it
#      naming its length and the limit, and no shot is written anywhere (the report's copy of the
#      name was cut at 1023 characters: the shots went to another folder, exit 0), also when only one
#      rank of an MPMD launch has it (the ranks decide together: that hung);
#   3. a job refused on one rank only (--workers beyond the CPUs of one): every rank ends, the error
#      said once (the passing rank hung, its worker waiting for an answer after the stop);
#   4. what `run` finds before MPI starts (the command line and the job file, read on every rank:
#      whether MPI is needed depends on the job) under `mpirun -np 2`: a bad key, a bad value, an
#      unknown option, --resume of a survey, said once (every rank said it) and every rank exits
#      with the status; an error on one rank only is named with its rank and host by rank 0, its
#      reason whole (~2030 characters: the "rank N" before it gives way); ranks given a survey and a
#      single-shot job are refused (the survey's rank would wait in MPI for the other);
#   5. what every rank would say alike (check, reference, compare, info, bench, export, the help, the
#      version) said once, by rank 0; those commands run on rank 0 alone (all but run), the other ranks
#      wait for it and exit 0;
#   6. a shot is named by its position as given, at UTM coordinates too: a shot at [500020.5, 5000020.5,
#      20.0] whose file is an input (the plan's refusal) or whose place holds a sidecar torrewave did not
#      write (that shot failed) was "shot 1 [500020, 5.00002e+06, 20]" (%g: 6 digits).
set -uo pipefail
source "$(dirname "$0")/../cli_lib.sh"
T=$TORREWAVE
source "$TW_SOURCE_DIR/tests/survey_lib.sh"
sv_init
cd "$tmp"

a=$(printf 'a%.0s' {1..200}) b=$(printf 'b%.0s' {1..200})  # a folder name has at most 255 bytes
long="$a/$b"
mkdir -p "$long"
cat > "$long/job.cfg" <<'JOB'
grid = { n = [30, 28, 20]; d = [10.0, 10.0, 10.0]; };
time = { steps = 20; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 4; };  boundary = { absorbing = 6; free_surface = true; };
solver = { kernel = "cpu"; threads = 1; };
shots = { positions = ( [50.0, 140.0, 0.0], [250.0, 60.0, 40.0] );
          lines = ( { from = [50.0, 100.0, 30.0]; to = [250.0, 100.0, 30.0]; count = 5; } ); receivers = "fixed"; };
sources = ( { wavelet = { type = "ricker"; frequency = 20.0; }; } );
receivers = { lines = ( { from = [0.0, 140.0, 10.0]; to = [290.0, 140.0, 10.0]; count = 30; } ); };
JOB

# ---------------------------------------------------------------- 1. a refusal, whole and once
expect 1 "free_surface" -- "$T" check "$long/job.cfg" -o refused
want=$(grep '^torrewave: error: ' "$tmp/out")
[ ${#want} -gt 700 ] || { echo "FAIL: check's error has ${#want} characters (the repro needs over 700)"; fail=1; }
same_error() { # same_error WHAT: the output's error lines are exactly check's, once
  local got
  got=$(grep 'error: ' "$tmp/out")
  if [ "$got" != "$want" ]; then
    echo "FAIL: $1: the error is not check's (${#want} characters), once; got ${#got}:"; cat "$tmp/out"; fail=1
  else echo "ok: $1: check's error, whole, once"; fi
}
expect 1 "free_surface" -- "$T" run "$long/job.cfg" -o refused
same_error "run"
[ ! -e refused ] || { echo "FAIL: the refused run left its output directory"; fail=1; }
if [ $mpi = 1 ]; then
  expect 1 "free_surface" -- mpirun -np 2 "$T" run "$long/job.cfg" -o refused
  same_error "mpirun -np 2 run"
  ! grep -q MPI_ABORT "$tmp/out" || { echo "FAIL: a refusal every rank knows ended in MPI_Abort"; fail=1; }
fi
# ... refused for a time step above the stability limit (TW_EUNSTABLE) or SEG-Y's sampling
# (TW_EUNSUPPORTED): the job's own settings too, refused as a bad job (exit 1, check's error, no
# directory left), not its 7 shots "not run" with exit 3 and advice to run the same command again
refusals=("time.dt=0.01:above the stability limit")
"$T" info | grep -q '^SEG-Y: built' && refusals+=("output.segy=true time.dt=0.0012345:not a whole number of microseconds")
for r in "${refusals[@]}"; do
  sets=(--set 'shots.positions=([50.0, 140.0, 20.0])')
  for s in ${r%%:*}; do sets+=(--set "$s"); done
  expect 1 "${r#*:}" -- "$T" check "$long/job.cfg" -o refused "${sets[@]}"
  want=$(grep '^torrewave: error: ' "$tmp/out")
  expect 1 "${r#*:}" -- "$T" run "$long/job.cfg" -o refused "${sets[@]}"
  same_error "run, ${r%%:*}"
  [ ! -e refused ] || { echo "FAIL: the run refused for ${r%%:*} left its output directory"; rm -rf refused; fail=1; }
done
if [ $mpi = 1 ]; then
  expect 1 "above the stability limit" -- mpirun -np 2 "$T" run "$long/job.cfg" -o refused --set time.dt=0.01 \
    --set 'shots.positions=([50.0, 140.0, 20.0])'
  [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] && [ ! -e refused ] ||
    { echo "FAIL: mpirun -np 2: a time step above the stability limit not refused once as a bad job"; fail=1; }
fi

# ---------------------------------------------------------------- 2. a directory too long
sed -i 's/\[50.0, 140.0, 0.0\]/[50.0, 140.0, 20.0]/; s/steps = 20/steps = 4/' "$long/job.cfg"
deep=$(printf "$b/%.0s" {1..6})deep  # 1210 characters, relative to $tmp
mkdir -p "${deep:0:1000}"            # folders on the way exist: a cut name could land in one
for cmd in "check" "run"; do
  expect 1 "has 1210 characters: a survey's output directory has at most 1023" -- "$T" $cmd "$long/job.cfg" -o "$deep"
done
if [ $mpi = 1 ]; then
  expect 1 "has 1210 characters" -- mpirun -np 2 "$T" run "$long/job.cfg" -o "$deep"
  [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] || { echo "FAIL: under mpirun the error is not said once"; fail=1; }
  # ... on one rank only (an MPMD launch, either rank): the ranks decide together (fuzzing, session
  # 19: the refusing rank left for MPI_Finalize while the other waited in a broadcast: a hang)
  expect 1 "has 1210 characters" -- timeout 60 mpirun -np 1 "$T" run "$long/job.cfg" -o "$deep" : \
    -np 1 "$T" run "$long/job.cfg" -o short
  [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] || { echo "FAIL: refused on rank 0 only: the error not said once"; fail=1; }
  expect 1 "has 1210 characters" -- timeout 60 mpirun -np 1 "$T" run "$long/job.cfg" -o short : \
    -np 1 "$T" run "$long/job.cfg" -o "$deep"
  [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] || { echo "FAIL: refused on rank 1 only: the error not said once"; fail=1; }
  [ ! -e short ] || { echo "FAIL: a job refused on one rank made the other's directory"; fail=1; }
fi
if find . -name 'shot-*' | grep -q .; then echo "FAIL: shots written for a refused directory:"; find . -name 'shot-*'; fail=1; fi

# ---------------------------------------------------------------- 3. refused on one rank only
# --workers over 4 threads a CPU on one rank of two (as on nodes of different sizes): that rank
# refuses the job, the other passes it and its worker may still be creating its session when the
# refusal arrives. Every rank must end with the error, said once: the passing rank's worker posted
# after the workers were stopped and waited for ever, its rank in pthread_join while the other
# waited in MPI_Finalize (review, session 19: exit 124 under timeout, no error printed).
if [ $mpi = 1 ]; then
  many=$((4 * $(nproc) + 1))
  for order in "plain:many" "many:plain"; do
    a1=() a2=()
    [ "${order%%:*}" = many ] && a1=(--workers "$many")
    [ "${order##*:}" = many ] && a2=(--workers "$many")
    expect 1 "workers" -- timeout 60 mpirun -np 1 "$T" run "$long/job.cfg" -o onerank "${a1[@]}" : \
      -np 1 "$T" run "$long/job.cfg" -o onerank "${a2[@]}"
    [ "$(grep -c 'error: ' "$tmp/out")" = 1 ] || { echo "FAIL: refused on one rank ($order): the error not said once"; fail=1; }
  done
fi

# ---------------------------------------------------------------- 4. before MPI starts: once
# launch PATTERN -- A... [: B...]: `mpirun -np 1 torrewave A : -np 1 torrewave B` (B: A again) says
# PATTERN; then $said: its lines matching PATTERN, $got: the ranks' exit statuses ("0 1 "), and ls-RANK:
# what the folder held when that rank ended.
launch() {
  local pat=$1 a=() b=() r; shift 2
  while [ $# -gt 0 ] && [ "$1" != : ]; do a+=("$1"); shift; done
  if [ $# -gt 0 ]; then shift; b=("$@"); else b=("${a[@]}"); fi
  rm -f st-0 st-1 ls-0 ls-1
  r='"$0" "$@"; echo $? > st-$OMPI_COMM_WORLD_RANK; ls > ls-$OMPI_COMM_WORLD_RANK'
  expect 0 "$pat" -- timeout 60 mpirun -np 1 bash -c "$r" "$T" "${a[@]}" : -np 1 bash -c "$r" "$T" "${b[@]}"
  got=$(cat st-0 st-1 2>/dev/null | tr '\n' ' ') said=$(grep -cE -- "$pat" "$tmp/out")
}
# ranks STATUS PATTERN -- A... [: B...]: PATTERN said on one line, no other line of torrewave's, and
# both ranks exited with STATUS.
ranks() {
  launch "${@:2}"
  if [ "$said" = 1 ] && [ "$(grep -c '^torrewave' "$tmp/out")" = 1 ] && [ "$got" = "$1 $1 " ]; then
    echo "ok: said once, both ranks $1"
  else echo "FAIL: not said once, or the ranks' statuses ($got) not $1"; fail=1; fi
}
if [ $mpi = 1 ]; then
  sed 's/\[250.0, 60.0, 40.0\] );/[250.0, 60.0, 40.0] );\n  bogus = 1;/' "$long/job.cfg" > bad.cfg
  sed -e '/^shots = /,/receivers = "fixed"; };$/d' \
    -e 's/sources = ( {/sources = ( { position = [150.0, 140.0, 60.0];/' "$long/job.cfg" > single.cfg
  ranks 1 "bad\.cfg:[0-9]+: shots\.bogus: unknown key" -- run bad.cfg -o once
  ranks 1 "single\.cfg: --set time\.steps=-4: time\.steps" -- run single.cfg --set time.steps=-4 -o once.h5
  ranks 2 '^torrewave run: unknown option "--bogus"$' -- run "$long/job.cfg" --bogus
  ranks 2 '^torrewave run: --resume is for a single-shot job' -- run "$long/job.cfg" --resume
  ranks 1 "^torrewave: error: rank 1 \(host [^)]+\): missing\.cfg: cannot read the job file: No such file" \
    -- run "$long/job.cfg" -o once : run missing.cfg -o once
  ranks 1 "^torrewave: error: missing\.cfg: cannot read the job file" \
    -- run missing.cfg -o once : run single.cfg -o once.h5
  ranks 1 "rank 0's '.*job\.cfg' is a survey, rank 1's 'single\.cfg' a single-shot job; every rank of a launch" \
    -- run "$long/job.cfg" -o once : run single.cfg -o once.h5
  # ... the one rank's reason whole where "rank 1 (host ...)" and it do not fit a message together
  dots=$(printf './%.0s' {1..988}) # (the reason: 2040 characters)
  ranks 1 "${dots//./\\.}missing\.cfg: cannot read the job file: No such file or directory$" \
    -- run "$long/job.cfg" -o once : run "${dots}missing.cfg" -o once
  got=$(grep '^torrewave: error: ' "$tmp/out")
  [ ${#got} -le $((18 + 2047)) ] || { echo "FAIL: the error has ${#got} characters, over a message's"; fail=1; }
  [ ! -e once ] && [ ! -e once.h5 ] || { echo "FAIL: a refused launch wrote its output"; fail=1; }
  ranks 2 '^usage: torrewave COMMAND' --
fi

# ---------------------------------------------------------------- 5. what only rank 0 says
# What every rank would say alike under `mpirun -np 2` was said once per rank: check's report,
# reference's line, the help and the version. check and reference run on rank 0 alone (one report,
# one file for the launch: both ranks wrote reference's, one refused by the other's lock); the other
# rank says nothing, waits for rank 0 in MPI (without spinning) and exits 0 once rank 0 is done (a
# launcher may stop the other tasks once one has ended), with no word from MPI.
# solo STATUS PATTERN -- ARGS...: PATTERN said on one line, no line said twice, nothing of mpirun's or
# MPI's, rank 0 exited with STATUS and rank 1 with 0.
solo() {
  launch "${@:2}"
  if [ "$said" = 1 ] && [ -z "$(grep -v '^$' "$tmp/out" | sort | uniq -d)" ] && [ "$got" = "$1 0 " ] &&
     ! grep -qE 'MPI_ABORT|improperly|^mpirun (has|detected|noticed)|Primary job' "$tmp/out"; then
    echo "ok: said once; the ranks' statuses $got"
  else echo "FAIL: not said once, or MPI said something, or the ranks' statuses ($got) not $1 0"; fail=1; fi
}
if [ $mpi = 1 ]; then
  solo 0 '^ok$' -- check single.cfg -o solo.h5
  solo 0 '^ok$' -- check "$long/job.cfg" -o solo
  solo 1 'bad\.cfg:[0-9]+: shots\.bogus: unknown key' -- check bad.cfg -o solo
  sed 's/ free_surface = true;//' single.cfg > ref.cfg # (reference: free space)
  solo 0 'analytic reference, 1630 receivers x 8001 samples' -- reference ref.cfg -o solo-ref.h5 --set time.steps=8000 \
    --set 'receivers.grids=({origin=[10.0,10.0];spacing=[5.0,5.0];count=[40,40];depth=20.0;})'
  grep -qx solo-ref.h5 ls-1 || { echo "FAIL: rank 1 ended before rank 0 had written reference's file"; fail=1; }
  # compare, info, bench and export too (export: one file for the launch, as reference's)
  solo 0 '^PASS: every dataset within rtol' -- compare solo-ref.h5 solo-ref.h5
  solo 0 '^CUDA: ' -- info
  solo 0 '^CPU ceilings: ' -- bench --kernels cpu --orders 2 --cpu-grid 48x48x48 --steps 2 --reps 1 --warmup 0
  if "$T" info | grep -q '^SEG-Y: built'; then
    solo 0 'solo\.sgy' -- export solo-ref.h5 --segy solo.sgy
    grep -qx solo.sgy ls-1 || { echo "FAIL: rank 1 ended before rank 0 had written export's file"; fail=1; }
  fi
  solo 0 '^commands:$' -- --help
  solo 0 '^usage: torrewave check JOB' -- check single.cfg --help
  solo 0 '^usage: torrewave reference JOB' -- help reference
  solo 0 '^usage: torrewave run JOB' -- run single.cfg -q -h
  solo 0 '^torrewave [0-9]+\.[0-9]+\.[0-9]+$' -- --version
  [ ! -e solo.h5 ] && [ ! -e solo ] || { echo "FAIL: check wrote an output"; fail=1; }
fi

# ---------------------------------------------------------------- 6. shot positions as given
mkdir utm
cat > utm.cfg <<'JOB'
grid = { n = [9, 9, 9]; d = [10.0, 10.0, 10.0]; origin = [500000.0, 5000000.0, 0.0]; };
time = { steps = 5; };
model = { type = "constant"; vp = 2000.0; };
scheme = { order = 4; };  boundary = { absorbing = 2; };
solver = { kernel = "cpu"; threads = 1; };
sources = ( { wavelet = { type = "ricker"; frequency = 10.0; }; } );
receivers = { points = ( [500000.0, 5000000.0, 0.0] ); };
snapshots = { every = 5; };
shots = { positions = ( [500010.0, 5000010.0, 10.0], [500020.5, 5000020.5, 20.0] ); receivers = "fixed"; };
JOB
printf '0.0\n1.0\n0.0\n' > utm/shot-00001.h5.part-999999
at='shot 1 \[500020\.5, 5000020\.5, 20\]: '
expect 1 "^torrewave: error: ${at}temporary file 'utm/shot-00001\.h5\.part-999999' of output 'utm/shot-00001\.h5' is a wavelet file" \
  -- "$T" check utm.cfg -o utm --set 'sources=({wavelet={type="file";file="utm/shot-00001.h5.part-999999";};})'
rm utm/shot-00001.h5.part-999999 && echo '<Xdmf/>' > utm/shot-00001.xdmf
for cmd in check run; do  # refused up front, before any shot runs (survey/plan.c: tw_survey_check_theirs)
  expect 1 "^torrewave: error: (utm\.cfg: )?${at}XDMF sidecar 'utm/shot-00001\.xdmf' of output 'utm/shot-00001\.h5' is there and torrewave did not write it" \
    -- "$T" $cmd utm.cfg -o utm
done
exit $fail
