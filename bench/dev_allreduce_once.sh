# one device call: the MPS allreduce matrix (ctest -L mps), then compute-sanitizer on the
# one_shot_ll and two_shot kernels with 2 ranks under MPS
bash bench/device_tests.sh -L mps > /tmp/ctest_mps.txt 2>&1
mkdir -p $OUT; cp /tmp/ctest_mps.txt $OUT/
grep -E "tests passed|\(Failed\)|Total Test" /tmp/ctest_mps.txt | head -20
. bench/mps.sh
for algo in one_shot_ll two_shot; do for tool in memcheck racecheck synccheck; do
  timeout 300 $MPIRUN -np 2 compute-sanitizer --tool $tool --error-exitcode 9 build/weft run examples/allreduce.lua \
    --set algo=$algo --no-time --elems 4097 > $OUT/sanitize_${algo}_$tool.log 2>&1
  echo "$algo $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/sanitize_${algo}_$tool.log | head -1)"
done; done
mps_stop
