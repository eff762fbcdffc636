# tests/mps/mps_tests.cmake: the comm families on 1..8 ranks sharing the one GPU (MPS).
# Label gpu: ctest -L gpu on the GPU machine; elsewhere each reports SKIP (77).  They share the
# MPS daemon and the GPU, so they run one at a time (RESOURCE_LOCK).
set(WEFT_MPS_CACHE ${PROJECT_BINARY_DIR}/testtmp/mps-cache)
function(weft_mps_test name np config)
  if(TEST mps.${name}.np${np})   # already in the rank-count sweep
    return()
  endif()
  add_test(NAME mps.${name}.np${np}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/run.sh ${np} $<TARGET_FILE:weft_cli> ${config} ${ARGN})
  set_tests_properties(mps.${name}.np${np} PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 600
                       RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
endfunction()
set(AR ${PROJECT_SOURCE_DIR}/examples/allreduce.lua)
set(MM --set algo=two_shot --set comm=multimem --set fallback=emulate)

# every rank count, the three data paths
foreach(np 1 2 3 4 8)
  weft_mps_test(f32_sum_one_shot ${np} ${AR})
  weft_mps_test(bf16_sum_two_shot ${np} ${AR} --set dtype=bf16 --set algo=two_shot)
  weft_mps_test(f16_max_multimem_emulated ${np} ${AR} ${MM} --set dtype=f16 --set op=max)
endforeach()
# every dtype x op x algo at 4 ranks
foreach(dt f32 f16 bf16)
  foreach(op sum max min prod)
    foreach(algo one_shot two_shot)
      weft_mps_test(${dt}_${op}_${algo} 4 ${AR} --set dtype=${dt} --set op=${op} --set algo=${algo})
    endforeach()
  endforeach()
endforeach()
# the emulated twin of every multimem operator the switch has
weft_mps_test(f32_sum_multimem_emulated 4 ${AR} ${MM})
foreach(dt f16 bf16)
  foreach(op sum min)
    weft_mps_test(${dt}_${op}_multimem_emulated 4 ${AR} ${MM} --set dtype=${dt} --set op=${op})
  endforeach()
endforeach()
# one_shot_ll: every dtype, rank counts 1..8, an odd rank count, 16-bit tails
foreach(np 1 2 3 8)
  weft_mps_test(f32_sum_one_shot_ll ${np} ${AR} --set algo=one_shot_ll)
endforeach()
weft_mps_test(bf16_max_one_shot_ll 4 ${AR} --set algo=one_shot_ll --set dtype=bf16 --set op=max)
weft_mps_test(f16_prod_one_shot_ll 5 ${AR} --set algo=one_shot_ll --set dtype=f16 --set op=prod --set threads=64)
weft_mps_test(custom_one_shot_ll 4 ${PROJECT_SOURCE_DIR}/tests/configs/allreduce_custom.lua --set algo=one_shot_ll)
# pdl: launches scheduled while the previous one finishes (the pdl chain in `weft run`), at every
# rank count (a next launch's parked blocks must not starve the ranks this one waits for), and a
# copy of the sources without griddepcontrol.wait must fail the chain
foreach(np 1 2 4 8)
  weft_mps_test(f32_sum_one_shot_pdl ${np} ${AR} --set pdl=true)
  weft_mps_test(bf16_sum_two_shot_pdl ${np} ${AR} --set pdl=true --set dtype=bf16 --set algo=two_shot)
  weft_mps_test(f32_sum_one_shot_ll_pdl ${np} ${AR} --set pdl=true --set algo=one_shot_ll)
endforeach()
weft_mps_test(f16_max_multimem_emulated_pdl 4 ${AR} ${MM} --set pdl=true --set dtype=f16 --set op=max)
add_test(NAME mps.allreduce_pdl_nowait_caught.np2 COMMAND bash ${PROJECT_SOURCE_DIR}/tests/gpu/pdl_nowait.sh
         $<TARGET_FILE:weft_cli> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/testtmp/pdl_nowait_ar allreduce 2)
set_tests_properties(mps.allreduce_pdl_nowait_caught.np2 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 600
                     RESOURCE_LOCK mps)
# a custom operator, checked through its Lua reference; odd rank counts and block caps
weft_mps_test(custom_two_shot 3 ${PROJECT_SOURCE_DIR}/tests/configs/allreduce_custom.lua)
weft_mps_test(custom_one_shot 4 ${PROJECT_SOURCE_DIR}/tests/configs/allreduce_custom.lua --set algo=one_shot)
weft_mps_test(f32_sum_two_shot_blocks1_t64 5 ${AR} --set algo=two_shot --set blocks=1 --set threads=64)
weft_mps_test(bf16_sum_one_shot_blocks3 8 ${AR} --set dtype=bf16 --set blocks=3 --set threads=128)

# a rank that never signals: every rank fails within the timeout, naming who it waited for
function(weft_mps_timeout name np mute sig)
  add_test(NAME mps.timeout.${name}.np${np}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh ${np} $<TARGET_FILE:weft_cli> ${AR} ${mute} ${sig} ${ARGN})
  set_tests_properties(mps.timeout.${name}.np${np} PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
endfunction()
weft_mps_timeout(ready 2 1 ready --elems 100000)
weft_mps_timeout(reduced 4 2 reduced --set algo=two_shot --elems 100000)
weft_mps_timeout(data 3 0 data --set algo=one_shot_ll --elems 100000)

# ---- ag_gemm: every variant on 1, 2, 4 and 8 ranks (sizes off the tiles; M split over the ranks)
set(AG ${PROJECT_SOURCE_DIR}/examples/ag_gemm.lua)
set(AG_SHAPES --shapes-only --shape 1000x1000x1000 --shape 2048x1536x512)
set(AG_SCALAR --set tile=auto --shapes-only --shape 1000x1000x1000 --shape 2048x256x256)
foreach(np 1 2 4 8)
  weft_mps_test(ag_fused_threadload ${np} ${AG} ${AG_SHAPES})
  weft_mps_test(ag_fused_tma ${np} ${AG} --set comm=tma ${AG_SHAPES})
  weft_mps_test(ag_fused_push_emulated ${np} ${AG} --set comm=multimem --set fallback=emulate ${AG_SHAPES})
  weft_mps_test(ag_gather_then_gemm ${np} ${AG} --set variant=gather_then_gemm ${AG_SHAPES})
  weft_mps_test(ag_naive_remote ${np} ${AG} --set variant=naive_remote ${AG_SCALAR})
  weft_mps_test(ag_threadload_gather ${np} ${AG} --set variant=threadload_gather ${AG_SCALAR})
  weft_mps_test(ag_multimem_gather_emulated ${np} ${AG} --set variant=multimem_gather --set fallback=emulate ${AG_SCALAR})
endforeach()
weft_mps_test(ag_fused_f16_bcol_rank_order 4 ${AG} --set dtype=f16 --set b_layout=col --set schedule=rank_order ${AG_SHAPES})
weft_mps_test(ag_fused_tile128x128_s6 8 ${AG} --set tile.n=128 --set stages=6 ${AG_SHAPES})
weft_mps_test(ag_fused_pingpong 2 ${AG} --set tile.n=128 --set mma=pingpong ${AG_SHAPES})
weft_mps_test(ag_fused_pingpong 8 ${AG} --set tile.n=128 --set mma=pingpong --set comm=multimem --set fallback=emulate ${AG_SHAPES})
# rank_order: every rank pulls / gathers the others in ascending order (not from rank + 1)
weft_mps_test(ag_gather_then_gemm_rank_order 4 ${AG} --set variant=gather_then_gemm --set schedule=rank_order ${AG_SHAPES})
weft_mps_test(ag_threadload_gather_rank_order 4 ${AG} --set variant=threadload_gather --set schedule=rank_order ${AG_SCALAR})
weft_mps_test(ag_fused_split_k 4 ${AG} --set split_k=2 --set tile.n=128 ${AG_SHAPES})
# split-K over clusters of 4 at decode sizes: 16 rows per shard, the grid counting units
weft_mps_test(ag_fused_split_k4_decode 2 ${AG} --set split_k=4 --set tile.m=64 --set tile.n=128 --set consumers=1
              --shapes-only --shape 32x4096x4096 --shape 1000x1000x1000)
# the TMA-store epilogue per shard: 1000 rows over 4 ranks are 250 per shard, not a tile multiple
weft_mps_test(ag_fused_epilogue_tma 4 ${AG} --set epilogue=tma --set stages=3 ${AG_SHAPES})
# ... with four stages: C per shard through two 64-column chunk buffers in turn (3-d stores)
weft_mps_test(ag_fused_epilogue_tma_s4 2 ${AG} --set epilogue=tma --set stages=4 --set cluster.m=2
              --shapes-only --shape 1000x1000x1000 --shape 2048x4096x264)
weft_mps_test(ag_fused_cluster_n2 2 ${AG} --set cluster.n=2 ${AG_SHAPES})
weft_mps_test(ag_fused_cluster_m2_tma 4 ${AG} --set cluster.m=2 --set comm=tma ${AG_SHAPES})
weft_mps_test(ag_fused_cluster_n2_pingpong 8 ${AG} --set cluster.n=2 --set tile.n=128 --set mma=pingpong ${AG_SHAPES})
weft_mps_test(ag_gather_then_gemm_push_emulated 4 ${AG} --set variant=gather_then_gemm --set comm=multimem --set fallback=emulate ${AG_SHAPES})
# a muted signal: one rank reports it (the others may have finished that launch), nobody hangs
function(weft_mps_timeout_ag name np mute sig)
  add_test(NAME mps.timeout.${name}.np${np}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh ${np} $<TARGET_FILE:weft_cli> ${AG} ${mute} ${sig}
                   --shapes-only --shape 1000x1000x1000 ${ARGN})
  set_tests_properties(mps.timeout.${name}.np${np} PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE};ANY_RANK=1")
endfunction()
weft_mps_timeout_ag(ag_ready 2 1 ready --set comm=tma)
# threadload: the muted READY is the cause, not the PULLED that cannot follow it (PULLED waits
# twice as long, so the report names rank 1's READY)
weft_mps_timeout_ag(ag_ready_threadload 2 1 ready)
weft_mps_timeout_ag(ag_pulled 4 2 pulled)

# ---- gemm_rs: GEMM + reduce-scatter on 1, 2, 3, 4 and 8 ranks; sizes off the tiles (M/P odd where
# the ranks allow it: 2040 / 8 = 255, 1500 / 4 = 375, 1002 / 3 = 334 ... N and k multiples of 8
# off 64 and 256); each shape checked against the double reference of the full-K sum, then
# 2 x 100 back-to-back launches bit-identical to the first (reduce = "ordered"; atomic below)
set(GRS ${PROJECT_SOURCE_DIR}/examples/gemm_rs.lua)
set(GRS_SHAPES --shapes-only --shape 2040x1000x1000 --shape 1032x1536x520)
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_rs_bf16 ${np} ${GRS} ${GRS_SHAPES})
  weft_mps_test(gemm_rs_f16_bcol ${np} ${GRS} --set dtype=f16 --set b_layout=col ${GRS_SHAPES})
  weft_mps_test(gemm_rs_bf16_ranks_known ${np} ${GRS} --set ranks=${np} ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_rs_odd_rows 3 ${GRS} --shapes-only --shape 1002x1000x1000 --shape 375x264x72)
weft_mps_test(gemm_rs_pingpong 4 ${GRS} --set tile.n=128 --set mma=pingpong ${GRS_SHAPES})
weft_mps_test(gemm_rs_split_k2 2 ${GRS} --set split_k=2 --set tile.n=128 ${GRS_SHAPES})
weft_mps_test(gemm_rs_cluster_m2 4 ${GRS} --set cluster.m=2 --set tile.m=64 --set consumers=1 --set tile.n=128 ${GRS_SHAPES})
weft_mps_test(gemm_rs_tile64_c1 8 ${GRS} --set tile.m=64 --set consumers=1 --set tile.n=128 --set stages=6 ${GRS_SHAPES})
# a rank that never sends DONE: every rank's fold waits for it and times out naming rank 1,
# signal "done" and the epoch; nobody hangs
add_test(NAME mps.timeout.gemm_rs_done.np2
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh 2 $<TARGET_FILE:weft_cli> ${GRS} 1 done
                 --shapes-only --shape 1000x1000x1000)
set_tests_properties(mps.timeout.gemm_rs_done.np2 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
# reduce = "atomic" (TMA bulk reduce-adds into one f32 staging): the same shapes and the same double
# reference; the runner's 2 x 100 back-to-back launches are each checked against the reference
# (which also proves the owner's zeroing between epochs: a half not zeroed doubles the sum), and
# bit-identical only where the order cannot matter (P <= 2: x + y = y + x), as the runner says
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_rs_atomic_bf16 ${np} ${GRS} --set reduce=atomic ${GRS_SHAPES})
  weft_mps_test(gemm_rs_atomic_f16_bcol ${np} ${GRS} --set reduce=atomic --set dtype=f16 --set b_layout=col ${GRS_SHAPES})
  weft_mps_test(gemm_rs_atomic_ranks_known ${np} ${GRS} --set reduce=atomic --set ranks=${np} ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_rs_atomic_odd_rows 3 ${GRS} --set reduce=atomic --shapes-only --shape 1002x1000x1000
              --shape 375x264x72)
weft_mps_test(gemm_rs_atomic_pingpong 4 ${GRS} --set reduce=atomic --set tile.n=128 --set mma=pingpong ${GRS_SHAPES})
weft_mps_test(gemm_rs_atomic_split_k2 2 ${GRS} --set reduce=atomic --set split_k=2 --set tile.n=128 ${GRS_SHAPES})
weft_mps_test(gemm_rs_atomic_cluster_m2 4 ${GRS} --set reduce=atomic --set cluster.m=2 --set tile.m=64 --set consumers=1
              --set tile.n=128 ${GRS_SHAPES})
weft_mps_test(gemm_rs_atomic_tile64_c1 8 ${GRS} --set reduce=atomic --set tile.m=64 --set consumers=1 --set tile.n=128
              --set stages=6 ${GRS_SHAPES})
add_test(NAME mps.timeout.gemm_rs_atomic_done.np2
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh 2 $<TARGET_FILE:weft_cli> ${GRS} 1 done
                 --set reduce=atomic --shapes-only --shape 1000x1000x1000)
set_tests_properties(mps.timeout.gemm_rs_atomic_done.np2 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")

# comm = "multimem" through its unicast twin: the partials stay home, the owner folds every rank's
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_rs_multimem_emulated ${np} ${GRS} --set comm=multimem --set fallback=emulate ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_rs_multimem_f16_bcol_ranks_known 4 ${GRS} --set comm=multimem --set fallback=emulate --set dtype=f16
              --set b_layout=col --set ranks=4 ${GRS_SHAPES})
weft_mps_test(gemm_rs_multimem_odd_rows 3 ${GRS} --set comm=multimem --set fallback=emulate --shapes-only
              --shape 1002x1000x1000 --shape 375x264x72)
add_test(NAME mps.timeout.gemm_rs_multimem_done.np2
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh 2 $<TARGET_FILE:weft_cli> ${GRS} 1 done --set comm=multimem
                 --set fallback=emulate --shapes-only --shape 1000x1000x1000)
set_tests_properties(mps.timeout.gemm_rs_multimem_done.np2 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
# comm = "tma" (ordered): the partial tiles stored by TMA bulk copies, the same fold and bits
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_rs_tma_bf16 ${np} ${GRS} --set comm=tma ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_rs_tma_f16_bcol_pingpong 4 ${GRS} --set comm=tma --set dtype=f16 --set b_layout=col --set mma=pingpong
              --set tile.n=128 --set ranks=4 ${GRS_SHAPES})
weft_mps_test(gemm_rs_tma_odd_rows 3 ${GRS} --set comm=tma --shapes-only --shape 1002x1000x1000 --shape 375x264x72)
weft_mps_test(gemm_rs_tma_split_k2 2 ${GRS} --set comm=tma --set split_k=2 --set tile.n=128 ${GRS_SHAPES})
# fold = "tiles": each own tile folded in its epilogue once the other ranks' flags for it arrived
# (the same checks: the double reference, 2 x 100 back-to-back launches bit-identical)
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_rs_tiles_bf16 ${np} ${GRS} --set fold=tiles ${GRS_SHAPES})
  weft_mps_test(gemm_rs_tiles_f16_bcol_ranks_known ${np} ${GRS} --set fold=tiles --set dtype=f16 --set b_layout=col
                --set ranks=${np} ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_rs_tiles_odd_rows 3 ${GRS} --set fold=tiles --shapes-only --shape 1002x1000x1000 --shape 375x264x72)
weft_mps_test(gemm_rs_tiles_pingpong 4 ${GRS} --set fold=tiles --set tile.n=128 --set mma=pingpong ${GRS_SHAPES})
weft_mps_test(gemm_rs_tiles_split_k2 2 ${GRS} --set fold=tiles --set split_k=2 --set tile.n=128 ${GRS_SHAPES})
weft_mps_test(gemm_rs_tiles_cluster_m2 4 ${GRS} --set fold=tiles --set cluster.m=2 --set tile.m=64 --set consumers=1
              --set tile.n=128 ${GRS_SHAPES})
# a cluster of two along N over an odd count of column blocks (1032 / 128 = 9): the second CTA's
# last tile lies past the matrix and must neither flag nor wait (its slot is another tile's)
weft_mps_test(gemm_rs_tiles_cluster_n2_odd 4 ${GRS} --set fold=tiles --set cluster.n=2 --set tile.n=128 --shapes-only
              --shape 1032x1032x520 --shape 2056x1160x256)
weft_mps_test(gemm_rs_tiles_tile64_c1 8 ${GRS} --set fold=tiles --set tile.m=64 --set consumers=1 --set tile.n=128
              --set stages=6 ${GRS_SHAPES})
# reducer = "producer": the loading warpgroup's spare warps fold the own tiles (the consumers send
# every tile, their own too); the same checks, and the generated rank count or any
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_rs_producer_bf16 ${np} ${GRS} --set fold=tiles --set reducer=producer --set ranks=${np} ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_rs_producer_any_f16_bcol 4 ${GRS} --set fold=tiles --set reducer=producer --set dtype=f16
              --set b_layout=col ${GRS_SHAPES})
weft_mps_test(gemm_rs_producer_odd_rows 3 ${GRS} --set fold=tiles --set reducer=producer --set ranks=3 --shapes-only
              --shape 1002x1000x1000 --shape 375x264x72)
weft_mps_test(gemm_rs_producer_pingpong 4 ${GRS} --set fold=tiles --set reducer=producer --set tile.n=128
              --set mma=pingpong --set ranks=4 ${GRS_SHAPES})
weft_mps_test(gemm_rs_producer_cluster_n2_odd 4 ${GRS} --set fold=tiles --set reducer=producer --set cluster.n=2
              --set tile.n=128 --set ranks=4 --shapes-only --shape 1032x1032x520 --shape 2056x1160x256)
weft_mps_test(gemm_rs_producer_tile64_c1 8 ${GRS} --set fold=tiles --set reducer=producer --set tile.m=64
              --set consumers=1 --set tile.n=128 --set stages=6 --set ranks=8 ${GRS_SHAPES})
add_test(NAME mps.timeout.gemm_rs_producer_tile.np3
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh 3 $<TARGET_FILE:weft_cli> ${GRS} 1 tile --set fold=tiles
                 --set reducer=producer --shapes-only --shape 999x1000x1000)
set_tests_properties(mps.timeout.gemm_rs_producer_tile.np3 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE};ANY_RANK=1")
# a rank whose tile flags never come: the others' own tiles time out naming it and signal "tile";
# the muted rank needs nothing from itself and finishes (one rank's report is enough: ANY_RANK)
add_test(NAME mps.timeout.gemm_rs_tile.np3
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh 3 $<TARGET_FILE:weft_cli> ${GRS} 1 tile --set fold=tiles
                 --shapes-only --shape 999x1000x1000)
set_tests_properties(mps.timeout.gemm_rs_tile.np3 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE};ANY_RANK=1")

# ---- gemm_ar: GEMM + allreduce, gemm_rs's shapes and rank counts; the reference covers every
# shard's rows (each owner's fold), and every rank must hold the same bytes; the multimem schedule
# through its unicast twin (partials stay home, the owner folds every rank's, fans the rows out)
set(GAR ${PROJECT_SOURCE_DIR}/examples/gemm_ar.lua)
set(GAR_MM --set comm=multimem --set fallback=emulate)
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_ar_bf16 ${np} ${GAR} ${GRS_SHAPES})
  weft_mps_test(gemm_ar_f16_bcol ${np} ${GAR} --set dtype=f16 --set b_layout=col ${GRS_SHAPES})
  weft_mps_test(gemm_ar_bf16_ranks_known ${np} ${GAR} --set ranks=${np} ${GRS_SHAPES})
  weft_mps_test(gemm_ar_multimem_emulated ${np} ${GAR} ${GAR_MM} ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_ar_odd_rows 3 ${GAR} --shapes-only --shape 1002x1000x1000 --shape 375x264x72)
foreach(np 1 2 3 4 8)
  weft_mps_test(gemm_ar_tiles_bf16 ${np} ${GAR} --set fold=tiles ${GRS_SHAPES})
endforeach()
weft_mps_test(gemm_ar_tiles_f16_bcol_pingpong 4 ${GAR} --set fold=tiles --set dtype=f16 --set b_layout=col --set mma=pingpong
              --set tile.n=128 --set ranks=4 ${GRS_SHAPES})
weft_mps_test(gemm_ar_tiles_cluster_m2_odd 4 ${GAR} --set fold=tiles --set cluster.m=2 --set tile.m=64 --set consumers=1
              --set tile.n=128 --shapes-only --shape 1032x1032x520)
weft_mps_test(gemm_ar_tiles_odd_rows 3 ${GAR} --set fold=tiles --shapes-only --shape 1002x1000x1000 --shape 375x264x72)
weft_mps_test(gemm_ar_multimem_f16_ranks_known 4 ${GAR} ${GAR_MM} --set dtype=f16 --set b_layout=col --set ranks=4 ${GRS_SHAPES})
weft_mps_test(gemm_ar_pingpong 4 ${GAR} --set tile.n=128 --set mma=pingpong ${GRS_SHAPES})
weft_mps_test(gemm_ar_split_k2 2 ${GAR} --set split_k=2 --set tile.n=128 ${GRS_SHAPES})
weft_mps_test(gemm_ar_tile64_c1 8 ${GAR} --set tile.m=64 --set consumers=1 --set tile.n=128 --set stages=6 ${GRS_SHAPES})
# a rank that never sends DONE (every rank's fold waits for it, the muted one's for its own), or
# never FOLDED (every other rank's gather waits for it; the muted rank itself finishes that launch,
# so one rank's report is enough: ANY_RANK): the timeout names rank 1, the signal and the epoch
# fold = "tiles": a muted TILE flag stops the others' own tiles, which then withhold FOLDED
foreach(case "done;after" "folded;after" "tile;tiles" "folded;tiles")
  list(GET case 0 sig)
  list(GET case 1 fold)
  set(any 0)
  if(NOT sig STREQUAL "done")
    set(any 1)
  endif()
  add_test(NAME mps.timeout.gemm_ar_${fold}_${sig}.np3
           COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh 3 $<TARGET_FILE:weft_cli> ${GAR} 1 ${sig} --set fold=${fold}
                   --shapes-only --shape 999x1000x1000)
  set_tests_properties(mps.timeout.gemm_ar_${fold}_${sig}.np3 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE};ANY_RANK=${any}")
endforeach()

# ---- allreduce_norm: allreduce + residual + RMS norm (checks rows 1, 3, 17, 128, 1000 at the hidden
# size max_cols; every rank the same y and h bits, in place, 100 back-to-back launches)
set(ARN ${PROJECT_SOURCE_DIR}/examples/allreduce_norm.lua)
foreach(np 1 2 3 4 8)
  foreach(algo one_shot two_shot one_shot_ll)
    weft_mps_test(arn_bf16_${algo} ${np} ${ARN} --set algo=${algo})
  endforeach()
endforeach()
foreach(dt f32 f16)
  foreach(algo one_shot two_shot one_shot_ll)
    weft_mps_test(arn_${dt}_${algo} 4 ${ARN} --set dtype=${dt} --set algo=${algo} --set max_cols=2048)
  endforeach()
endforeach()
# odd hidden sizes: rows start off a 16-byte boundary (scalars at both ends; 16-bit one_shot_ll takes a
# slot per element)
foreach(algo one_shot two_shot one_shot_ll)
  weft_mps_test(arn_bf16_odd1003_${algo} 3 ${ARN} --set algo=${algo} --set max_cols=1003)
  weft_mps_test(arn_f32_odd1001_${algo} 2 ${ARN} --set algo=${algo} --set dtype=f32 --set max_cols=1001)
  weft_mps_test(arn_f16_odd1002_${algo} 4 ${ARN} --set algo=${algo} --set dtype=f16 --set max_cols=1002)
endforeach()
# a row per cluster (long rows, few tokens), no residual, eps as an argument, the multimem twin, pdl
weft_mps_test(arn_cluster4_8192 4 ${ARN} --set cluster=4 --set max_cols=8192)
weft_mps_test(arn_cluster4_ll_16384 8 ${ARN} --set cluster=4 --set max_cols=16384 --set algo=one_shot_ll)
weft_mps_test(arn_cluster8_two_shot_odd 2 ${ARN} --set cluster=8 --set max_cols=16383 --set algo=two_shot --set threads=256)
weft_mps_test(arn_no_residual 4 ${ARN} --set residual=false --set algo=two_shot)
weft_mps_test(arn_eps_arg 2 ${ARN} --set eps=arg)
weft_mps_test(arn_rows_per_cta8 4 ${ARN} --set rows_per_cta=8 --set threads=256 --set max_cols=1024)
foreach(np 1 3 8)
  weft_mps_test(arn_multimem_emulated ${np} ${ARN} --set algo=two_shot --set comm=multimem --set fallback=emulate)
endforeach()
foreach(np 1 2 4 8)
  foreach(algo one_shot two_shot one_shot_ll)
    weft_mps_test(arn_pdl_${algo} ${np} ${ARN} --set pdl=true --set algo=${algo})
  endforeach()
endforeach()
# 16384 tokens
weft_mps_test(arn_tokens16384 2 ${ARN} --shapes-only --shape 16384x4096 --shape 1x4096)
# kernels generated for the world size (ranks = P): one rank's grid is not capped and has no exchange
weft_mps_test(arn_ranks1_tokens16384 1 ${ARN} --set ranks=1 --shapes-only --shape 16384x4096 --shape 1x4096 --shape 17x4096)
foreach(np 2 3 4 8)
  foreach(algo one_shot two_shot one_shot_ll)
    weft_mps_test(arn_ranks_${algo} ${np} ${ARN} --set ranks=${np} --set algo=${algo})
  endforeach()
endforeach()
weft_mps_test(arn_ranks4_min_blocks2_f32_odd 4 ${ARN} --set ranks=4 --set min_blocks=2 --set dtype=f32 --set max_cols=1001)
weft_mps_test(arn_ranks2_min_blocks2_pdl 2 ${ARN} --set ranks=2 --set min_blocks=2 --set pdl=true)
weft_mps_test(arn_ranks8_min_blocks2_two_shot 8 ${ARN} --set ranks=8 --set min_blocks=2 --set algo=two_shot)
weft_mps_test(arn_ranks8_multimem_emulated 8 ${ARN} --set ranks=8 --set algo=two_shot --set comm=multimem --set fallback=emulate)
# y as FP8 E4M3 with a scale per token (one_shot, one_shot_ll; the local path at one rank)
set(FP8 --set quant=fp8_e4m3)
foreach(np 1 2 3 4 8)
  foreach(algo one_shot one_shot_ll)
    weft_mps_test(arn_fp8_bf16_${algo} ${np} ${ARN} ${FP8} --set algo=${algo})
  endforeach()
endforeach()
foreach(algo one_shot one_shot_ll)
  weft_mps_test(arn_fp8_f32_odd1001_${algo} 4 ${ARN} ${FP8} --set algo=${algo} --set dtype=f32 --set max_cols=1001)
  weft_mps_test(arn_fp8_f16_odd1003_${algo} 3 ${ARN} ${FP8} --set algo=${algo} --set dtype=f16 --set max_cols=1003)
  weft_mps_test(arn_fp8_pdl_${algo} 2 ${ARN} ${FP8} --set algo=${algo} --set pdl=true)
endforeach()
weft_mps_test(arn_fp8_cluster4_8192 4 ${ARN} ${FP8} --set cluster=4 --set max_cols=8192 --set ranks=4)
weft_mps_test(arn_fp8_no_residual_pdl 2 ${ARN} ${FP8} --set residual=false --set pdl=true)
weft_mps_test(arn_fp8_ranks8_rows_per_cta8 8 ${ARN} ${FP8} --set ranks=8 --set rows_per_cta=8 --set threads=256 --set max_cols=1024)
weft_mps_test(arn_fp8_ranks1_tokens16384 1 ${ARN} ${FP8} --set ranks=1 --shapes-only --shape 16384x4096 --shape 3x4096)
# the rule's kernels (ranks = P, two blocks per SM, two_shot from 4 ranks and 4 MB) at odd and large shapes
foreach(np 2 3 8)
  weft_mps_test(arn_auto ${np} ${PROJECT_SOURCE_DIR}/tests/configs/allreduce_norm_auto.lua --auto --shapes-only
                --shape 17x4096 --shape 1000x8192 --shape 3x1003 --shape 1x16384 --shape 2048x2048)
endforeach()
# ... and refused, on every rank, by a world of another size
add_test(NAME mps.arn_ranks_mismatch.np3
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/expect_fail.sh 3 $<TARGET_FILE:weft_cli>
                 "generated for ranks = 2 \\(its config's field `ranks`\\), but the world has 3 ranks" ${ARN} --set ranks=2)
set_tests_properties(mps.arn_ranks_mismatch.np3 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
function(weft_mps_timeout_arn name np mute sig)
  add_test(NAME mps.timeout.${name}.np${np}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh ${np} $<TARGET_FILE:weft_cli> ${ARN} ${mute} ${sig} ${ARGN})
  set_tests_properties(mps.timeout.${name}.np${np} PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
endfunction()
weft_mps_timeout_arn(arn_ready 2 1 ready --shapes-only --shape 1000x4096)
weft_mps_timeout_arn(arn_reduced 4 2 reduced --set algo=two_shot --shapes-only --shape 1000x4096)
weft_mps_timeout_arn(arn_data 3 0 data --set algo=one_shot_ll --shapes-only --shape 100x4096)
weft_mps_timeout_arn(arn_ready_cluster 2 0 ready --set cluster=4 --set max_cols=8192 --shapes-only --shape 64x8192)
weft_mps_timeout_arn(arn_reduced_ranks4 4 3 reduced --set algo=two_shot --set ranks=4 --shapes-only --shape 1000x4096)

# ---- reduce_scatter and all_gather: every rank count x dtype (the checked sizes include n = 1 and
# odd n, whose chunks start off a 16-byte boundary), the emulated multimem twin, pdl, in place
set(RS ${PROJECT_SOURCE_DIR}/examples/reduce_scatter.lua)
set(AGC ${PROJECT_SOURCE_DIR}/examples/all_gather.lua)
set(COLL_MM --set comm=multimem --set fallback=emulate)
foreach(np 1 2 3 4 8)
  foreach(dt f32 f16 bf16)
    weft_mps_test(reduce_scatter_${dt}_sum ${np} ${RS} --set dtype=${dt})
    weft_mps_test(all_gather_${dt} ${np} ${AGC} --set dtype=${dt})
  endforeach()
  weft_mps_test(reduce_scatter_bf16_sum_multimem_emulated ${np} ${RS} ${COLL_MM} --set dtype=bf16)
  weft_mps_test(all_gather_f16_multimem_emulated ${np} ${AGC} ${COLL_MM} --set dtype=f16)
endforeach()
# every operator at 4 ranks (prod on powers of two: exact), a custom one through its Lua reference
foreach(dt f32 f16 bf16)
  foreach(op max min prod)
    weft_mps_test(reduce_scatter_${dt}_${op} 4 ${RS} --set dtype=${dt} --set op=${op})
  endforeach()
endforeach()
weft_mps_test(reduce_scatter_custom 3 ${PROJECT_SOURCE_DIR}/tests/configs/reduce_scatter_custom.lua)
# the emulated twin of every switch operator, and of the f32 store
weft_mps_test(reduce_scatter_f32_sum_multimem_emulated 4 ${RS} ${COLL_MM})
foreach(dt f16 bf16)
  foreach(op max min)
    weft_mps_test(reduce_scatter_${dt}_${op}_multimem_emulated 4 ${RS} ${COLL_MM} --set dtype=${dt} --set op=${op})
  endforeach()
endforeach()
weft_mps_test(all_gather_f32_multimem_emulated 5 ${AGC} ${COLL_MM})
# pdl: a second launch reading what the first wrote (the chain in `weft run`), every rank count
foreach(np 1 2 4 8)
  weft_mps_test(reduce_scatter_f32_sum_pdl ${np} ${RS} --set pdl=true)
  weft_mps_test(all_gather_bf16_pdl ${np} ${AGC} --set pdl=true --set dtype=bf16)
endforeach()
weft_mps_test(reduce_scatter_f16_max_multimem_emulated_pdl 4 ${RS} ${COLL_MM} --set pdl=true --set dtype=f16 --set op=max)
weft_mps_test(all_gather_f32_multimem_emulated_pdl 3 ${AGC} ${COLL_MM} --set pdl=true)
# block caps and small blocks: every block loops over many vectors of every chunk
weft_mps_test(reduce_scatter_f32_sum_blocks1_t64 5 ${RS} --set blocks=1 --set threads=64)
weft_mps_test(all_gather_bf16_blocks3_t128 8 ${AGC} --set dtype=bf16 --set blocks=3 --set threads=128)
# generated for the world size (ranks = P: the loops and the fold's loads are P), threadload and
# the twin; another world size is refused on every rank, naming the field
foreach(np 1 2 3 4 8)
  weft_mps_test(reduce_scatter_bf16_sum_ranks_known ${np} ${RS} --set dtype=bf16 --set ranks=${np})
  weft_mps_test(all_gather_f16_ranks_known ${np} ${AGC} --set dtype=f16 --set ranks=${np})
endforeach()
weft_mps_test(reduce_scatter_bf16_max_multimem_emulated_ranks_known 8 ${RS} ${COLL_MM} --set dtype=bf16 --set op=max --set ranks=8)
weft_mps_test(all_gather_bf16_multimem_emulated_ranks_known 4 ${AGC} ${COLL_MM} --set dtype=bf16 --set ranks=4)
add_test(NAME mps.reduce_scatter_ranks_mismatch.np2
         COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/expect_fail.sh 2 $<TARGET_FILE:weft_cli>
                 "generated for ranks = 4 \\(its config's field `ranks`\\), but the world has 2 ranks" ${RS} --set ranks=4)
set_tests_properties(mps.reduce_scatter_ranks_mismatch.np2 PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                     RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
# a rank that never signals READY: every rank fails within the timeout, naming rank, signal, epoch
function(weft_mps_timeout_coll name np config mute)
  add_test(NAME mps.timeout.${name}.np${np}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/mps/timeout.sh ${np} $<TARGET_FILE:weft_cli> ${config} ${mute} ready ${ARGN})
  set_tests_properties(mps.timeout.${name}.np${np} PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 TIMEOUT 300
                       RESOURCE_LOCK mps ENVIRONMENT "WEFT_CACHE_DIR=${WEFT_MPS_CACHE}")
endfunction()
weft_mps_timeout_coll(reduce_scatter_ready 2 ${RS} 1 --elems 100000)
weft_mps_timeout_coll(reduce_scatter_ready_multimem 4 ${RS} 3 ${COLL_MM} --elems 4097)
weft_mps_timeout_coll(all_gather_ready 3 ${AGC} 0 --elems 100000)
weft_mps_timeout_coll(all_gather_ready_multimem 2 ${AGC} 1 ${COLL_MM} --elems 7)
