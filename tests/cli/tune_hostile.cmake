# weft tune against input an attacker or a careless user would give it (no GPU: --fake-timing):
#  - swept values of ~4 KB each: the labels, CSV rows and stored configs outgrow every fixed
#    buffer weft had (a 4 KB stack buffer overflowed, the CSV buffer wrote garbage);
#  - an output folder whose name holds a quote and a backquoted command: the plot's script and
#    gnuplot's command line must never run it (gnuplot expands backquotes in double quotes; the
#    plot used to start through system() with the folder in single quotes).
#   -DWEFT=... -DSRC=<repo> -DOUT=<folder>
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(evil "${OUT}/it's `touch PWNED` $(touch PWNED2) \" \\")
execute_process(COMMAND ${WEFT} tune ${SRC}/tests/sweeps/long_values.lua --fake-timing --jobs 2 --plot
                        --db ${OUT}/tune.db -o ${evil}
                WORKING_DIRECTORY ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft tune (long values, hostile folder): exit ${rc}\n${out}${err}")
endif()
foreach(f PWNED PWNED2)
  if(EXISTS "${OUT}/${f}")
    message(FATAL_ERROR "a command in the output folder's name ran (${OUT}/${f} exists)\n${out}${err}")
  endif()
endforeach()
if(NOT EXISTS "${evil}/tune-row_reduce.csv")
  message(FATAL_ERROR "no CSV in ${evil}\n${out}${err}")
endif()
file(READ "${evil}/tune-row_reduce.csv" csv)
string(LENGTH "${csv}" n)
if(n LESS 2000)
  message(FATAL_ERROR "the CSV lacks the long values (${n} bytes)\n${csv}")
endif()
# the config column whole: the long value ends "a  + b" (its :sub(1, 3900) .. " + b"), which a
# field cut at a fixed buffer's length lacks; one row for each of threads = 256 and 512
string(REGEX MATCHALL "\"op\\.combine=a \\+ b( \\+ 0\\.0f \\* a)+  \\+ b threads=[0-9]+\"" whole "${csv}")
list(LENGTH whole nwhole)
if(NOT nwhole EQUAL 2)
  message(FATAL_ERROR "${nwhole} of the 2 long configs are whole in the CSV (a cut config column?): ${evil}/tune-row_reduce.csv")
endif()
if(NOT EXISTS "${evil}/tune-row_reduce.png" AND NOT "${err}" MATCHES "could not plot")
  message(FATAL_ERROR "neither a plot nor a reason why not\n${out}${err}")
endif()
message(STATUS "long values and a hostile folder name: exit 0, ${n}-byte CSV, nothing ran")
