# One rank of an mpirun job fails before the others (MPMD: each rank its own command line): every
# rank must stop, within the time limit (a hang fails the test), with a non-zero exit, and the
# others must report the failing rank's message -- never an MPI abort or a wait in a collective.
#   -DMPIEXEC=... -DWEFT=... -DSRC=<repo>
set(SW ${SRC}/examples/sweeps/row_reduce.lua)
set(EX ${SRC}/examples)
# name | rank 0's arguments | rank 1's arguments | what the output must hold (ranks share it)
set(cases
  "bad sweep on rank 1|tune ${SW} --fake-timing --no-run|tune ${SW} --fake-timing --no-run --set shapes=3|rank 1: ${SW}: shapes"
  "fake timing on rank 0 only|tune ${SW} --fake-timing --no-run|tune ${SW} --no-run|were given different options"
  "no-run on rank 1 only|tune ${SW} --fake-timing|tune ${SW} --fake-timing --no-run|were given different options"
  "missing sweep on rank 1|tune ${SW} --fake-timing|tune ${SRC}/no/such/sweep.lua --fake-timing|rank 1: weft tune: "
  "unknown flag on rank 0|tune ${SW} --fake-timing --frobnicate|tune ${SW} --fake-timing|rank 0: weft tune: unknown option '--frobnicate'"
  "no device on any rank|tune ${SW} --jobs 1|tune ${SW} --jobs 1|no NVIDIA driver"
  "missing config on rank 1 (run)|run ${EX}/allreduce.lua|run ${SRC}/no/such/config.lua|no/such/config.lua"
  "bad --set on rank 0 (run)|run ${EX}/allreduce.lua --set threads=100|run ${EX}/allreduce.lua|${EX}/allreduce.lua: threads = 100: must be one of")
foreach(c IN LISTS cases)
  string(REPLACE "|" ";" fields "${c}")
  list(GET fields 0 name)
  list(GET fields 1 a0)
  list(GET fields 2 a1)
  list(GET fields 3 want)
  separate_arguments(a0l UNIX_COMMAND "${a0}")
  separate_arguments(a1l UNIX_COMMAND "${a1}")
  execute_process(COMMAND ${MPIEXEC} --oversubscribe -x WEFT_DRIVER_LIB=/nonexistent/libcuda.so.1 -np 1 ${WEFT} ${a0l}
                          : -np 1 ${WEFT} ${a1l}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  set(all "${out}${err}")
  if(rc MATCHES "timeout|Process terminated")
    message(FATAL_ERROR "${name}: the ranks did not stop (${rc})\n${all}")
  endif()
  if(rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit 0, expected a failure\n${all}")
  endif()
  if(all MATCHES "MPI_ABORT|MPI_ERR_|signal 6|signal 11|Segmentation")
    message(FATAL_ERROR "${name}: an MPI abort or a crash\n${all}")
  endif()
  string(FIND "${all}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: the output lacks '${want}'\n${all}")
  endif()
  message(STATUS "${name}: exit ${rc}, every rank stopped")
endforeach()
