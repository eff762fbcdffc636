# weft tune under mpirun: every rank runs every candidate, times are the MAX over ranks, rank 0
# decides and broadcasts, so all ranks agree on each shape's best.  A fake timing source makes
# the ranks' times differ (rank r reports (1 + 0.05 r) x), so the MAX is visible.
# A second run gives the ranks different sweeps: every rank must fail with the same message.
#   -DMPIEXEC=... -DWEFT=... -DSWEEP=... -DOUT=<folder>
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${MPIEXEC} --oversubscribe -np 2 ${WEFT} tune ${SWEEP} --fake-timing --jobs 1
                        --db ${OUT}/tune.db -o ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun -np 2 weft tune: exit ${rc}\n${out}${err}")
endif()
string(REGEX MATCHALL "agreed: rank [0-9] of 2: [^\n]*" lines "${out}")
list(LENGTH lines n)
if(n LESS 2)
  message(FATAL_ERROR "expected agreed: lines from both ranks, got ${n}\n${out}")
endif()
set(saw_max FALSE)
foreach(l IN LISTS lines)
  if(NOT l MATCHES "agreed: rank ([0-9]) of 2: ([^:]*): ([^,]*), ([0-9.]+) us \\(max over ranks, this rank measured ([0-9.]+) us\\)")
    message(FATAL_ERROR "bad line: ${l}")
  endif()
  set(shape "${CMAKE_MATCH_2}")
  string(MAKE_C_IDENTIFIER "${shape}" key)
  set(pick "${CMAKE_MATCH_3} ${CMAKE_MATCH_4}")
  if(DEFINED best_${key} AND NOT best_${key} STREQUAL pick)
    message(FATAL_ERROR "ranks disagree on ${shape}: '${best_${key}}' vs '${pick}'")
  endif()
  set(best_${key} "${pick}")
  if(NOT CMAKE_MATCH_4 STREQUAL CMAKE_MATCH_5)
    set(saw_max TRUE)
  endif()
endforeach()
if(NOT saw_max)
  message(FATAL_ERROR "no rank's own time differed from the agreed one: the MAX over ranks is not in use\n${out}")
endif()
message(STATUS "${n} agreed lines, identical per shape")

# MPMD: the two ranks expand different sweeps
execute_process(COMMAND ${MPIEXEC} --oversubscribe -np 1 ${WEFT} tune ${SWEEP} --fake-timing --no-run --jobs 1
                        : -np 1 ${WEFT} tune ${SWEEP} --set base.threads=512 --fake-timing --no-run --jobs 1
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
if(rc EQUAL 0)
  message(FATAL_ERROR "ranks with different sweeps did not fail\n${out}${err}")
endif()
foreach(r 0 1)
  string(FIND "${err}" "weft tune: rank ${r}: the ranks expanded different sweeps" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "rank ${r} did not report the disagreement\n${out}${err}")
  endif()
endforeach()
message(STATUS "disagreeing sweeps: every rank failed with the message")
