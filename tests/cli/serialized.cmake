# A kernel whose WGMMAs ptxas serialises (C7520) must not pass unnoticed: from a copy of the
# sources with the GEMM's per-k-block wgmma.fence limited to a tile's first k-block (the change
# that ran 1.1-1.3x slower on the GPU) and the warpgroup index per thread, `weft build` must print
# ptxas's report as a warning, and `weft tune --no-run` must reject the candidate.  The real
# sources must give neither.
#   -DWEFT=... -DSRC=<repo> -DOUT=<folder>
file(REMOVE_RECURSE "${OUT}")
file(COPY "${SRC}/gen" "${SRC}/templates" DESTINATION "${OUT}/src")
set(cuh "${OUT}/src/templates/weft/gemm_mainloop.cuh")
file(READ "${cuh}" text)
string(FIND "${text}" "    wgmma_fence();   // every k-block" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the per-k-block wgmma_fence() line moved: update tests/cli/serialized.cmake")
endif()
string(REPLACE "    wgmma_fence();   // every k-block" "    if (kb == kb0) wgmma_fence();   // every k-block"
       text "${text}")
file(WRITE "${cuh}" "${text}")
# (with the warpgroup index visibly warp-uniform ptxas keeps the WGMMAs in order without the fence:
# the copy also takes threadIdx.x / 128 as it comes, as the kernel did when the fence was measured)
set(kern "${OUT}/src/templates/weft/gemm_kernel.cuh")
file(READ "${kern}" text)
string(FIND "${text}" "__shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0)" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the warp-uniform warpgroup index moved: update tests/cli/serialized.cmake")
endif()
string(REPLACE "__shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0)" "(int)(threadIdx.x / 128)" text "${text}")
file(WRITE "${kern}" "${text}")
file(WRITE "${OUT}/sweep.lua" "return { base = { family = \"gemm\", tile = { m = 64, n = 128, k = 64 },\n"
     "  consumers = 1, stages = 6 }, space = { group = { 8, 16 } }, shapes = { { m = 1024, n = 1024, k = 1024 } } }\n")

function(run_weft src expect_warn)
  set(cfg "${SRC}/examples/gemm.lua")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "WEFT_SOURCE_DIR=${src}" "WEFT_CACHE_DIR=${OUT}/cache"
                          ${WEFT} build ${cfg} --set tile.m=64 --set tile.n=128 --set consumers=1 --set stages=6
                          -o ${OUT}/k
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weft build (sources ${src}): exit ${rc}\n${out}${err}")
  endif()
  string(FIND "${out}" "warning: ptxas: Potential Performance Loss: wgmma" w)
  if(expect_warn AND w EQUAL -1)
    message(FATAL_ERROR "weft build did not warn about serialised WGMMAs (sources ${src}):\n${out}")
  elseif(NOT expect_warn AND NOT w EQUAL -1)
    message(FATAL_ERROR "weft build warns about serialised WGMMAs in the real sources:\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "WEFT_SOURCE_DIR=${src}" "WEFT_CACHE_DIR=${OUT}/cache"
                          ${WEFT} tune ${OUT}/sweep.lua --no-run --jobs 2 --db ${OUT}/tune.db -o ${OUT}/t
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  string(FIND "${out}" "3 of 3 kernels" all)   # (the two candidates and the base config)
  string(FIND "${out}" ", 3 for serialised WGMMAs" r)
  if(all EQUAL -1)
    message(FATAL_ERROR "weft tune compiled other than the 3 kernels expected (exit ${rc}):\n${out}${err}")
  elseif(expect_warn AND r EQUAL -1)
    message(FATAL_ERROR "weft tune did not reject the serialised candidates (exit ${rc}):\n${out}${err}")
  elseif(NOT expect_warn AND "${out}" MATCHES "for serialised WGMMAs")
    message(FATAL_ERROR "weft tune rejects real candidates as serialised:\n${out}${err}")
  endif()
endfunction()

run_weft("${OUT}/src" TRUE)
run_weft("${SRC}" FALSE)
message(STATUS "serialised WGMMAs: warned and rejected; the real sources: neither")
