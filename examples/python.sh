# examples/python.sh — sourced by the examples' run.sh: sets PY to a python3 that imports h5py,
# numpy and matplotlib: $PYTHON when given, else the first of /usr/bin/python3 (Debian's, which
# has them after scripts/setup.sh), python3 and python on the PATH. None: PY is empty and the
# reason is printed, so that run.sh can skip the plots and still finish the run.
PY=""
for _c in ${PYTHON:-} /usr/bin/python3 python3 python; do
  if command -v "$_c" > /dev/null 2>&1 && "$_c" -c 'import h5py, numpy, matplotlib' 2> /dev/null; then
    PY=$_c
    break
  fi
done
if [ -z "$PY" ]; then
  echo "no python3 with h5py, numpy and matplotlib found (tried \$PYTHON, /usr/bin/python3, python3, python):" \
       "skipping the plots; Debian: apt-get install python3-h5py python3-matplotlib, or set PYTHON" >&2
fi
unset _c
