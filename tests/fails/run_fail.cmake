# tests/fails/run_fail.cmake: one must-fail config.
#
#   cmake -DWEFT=build/weft -DCONFIG=tests/fails/x.lua -DOUT=build/failout/x -P run_fail.cmake
#
# Runs `weft gen CONFIG -o OUT` in a fresh, empty OUT and fails unless
#   - the exit code is 2 (a bad config, not a crash or a generator bug),
#   - stderr contains every `-- expect: <text>` line of the config (literal substrings),
#   - stderr names the config file (its path as given),
#   - OUT is still empty afterwards: nothing written, not even half.
# `-- set: key=value` lines in the config become `--set key=value` arguments.

foreach(v WEFT CONFIG OUT)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "run_fail.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${CONFIG}")
  message(FATAL_ERROR "run_fail.cmake: no config ${CONFIG}")
endif()

# Read the directives.  CMake lists split on ';' and treat brackets specially, and expectations
# quote messages that contain both, so they are masked while the text is split into lines.
file(READ "${CONFIG}" text)
string(REPLACE ";" "@WEFT_SEMI@" text "${text}")
string(REPLACE "[" "@WEFT_LB@" text "${text}")
string(REPLACE "]" "@WEFT_RB@" text "${text}")
string(REPLACE "\r" "" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

set(expects "")
set(sets "")
set(n_expect 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^-- expect: (.*)$")
    string(REGEX REPLACE "[ \t]+$" "" e "${CMAKE_MATCH_1}")
    if(e STREQUAL "")
      message(FATAL_ERROR "${CONFIG}: empty '-- expect:' line")
    endif()
    list(APPEND expects "${e}")
    math(EXPR n_expect "${n_expect} + 1")
  elseif(line MATCHES "^-- set: (.*)$")
    list(APPEND sets "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(n_expect EQUAL 0)
  message(FATAL_ERROR "${CONFIG}: no '-- expect: <text>' line; every must-fail config needs one")
endif()

set(args gen "${CONFIG}")
foreach(s IN LISTS sets)
  string(REPLACE "@WEFT_SEMI@" ";" s "${s}")
  string(REPLACE "@WEFT_LB@" "[" s "${s}")
  string(REPLACE "@WEFT_RB@" "]" s "${s}")
  list(APPEND args --set "${s}")
endforeach()
list(APPEND args -o "${OUT}")

file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

execute_process(
  COMMAND "${WEFT}" ${args}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 30)

set(problems "")
if(NOT "${rc}" STREQUAL "2")
  string(APPEND problems "\n  exit code ${rc}, want 2 (a bad config)")
endif()
foreach(e IN LISTS expects)
  string(REPLACE "@WEFT_SEMI@" ";" e "${e}")
  string(REPLACE "@WEFT_LB@" "[" e "${e}")
  string(REPLACE "@WEFT_RB@" "]" e "${e}")
  string(FIND "${err}" "${e}" pos)
  if(pos EQUAL -1)
    string(APPEND problems "\n  stderr lacks: ${e}")
  endif()
endforeach()
string(FIND "${err}" "${CONFIG}" pos)
if(pos EQUAL -1)
  string(APPEND problems "\n  stderr does not name the config file ${CONFIG}")
endif()
file(GLOB_RECURSE left LIST_DIRECTORIES true "${OUT}/*")
if(left)
  string(REPLACE ";" "\n    " left_lines "${left}")
  string(APPEND problems "\n  ${OUT} is not empty:\n    ${left_lines}")
endif()

if(problems)
  message(FATAL_ERROR "weft gen ${CONFIG} (with ${sets}):${problems}\n"
    "--- stderr ---\n${err}--- stdout ---\n${out}--------------")
endif()
message(STATUS "ok: exit 2, ${n_expect} expected message(s), nothing written")
