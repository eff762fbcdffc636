# one device call: the MPS allreduce matrix (ctest -L mps)
bash bench/device_tests.sh -L mps > /tmp/ctest_mps.txt 2>&1
mkdir -p $OUT; cp /tmp/ctest_mps.txt $OUT/
grep -E "tests passed|\(Failed\)|Total Test" /tmp/ctest_mps.txt | head -20
grep -E "elapsed|PASS|FAIL" $OUT/ctest_gpu.log | head
