# one device call: every GPU test (single-rank families and the MPS allreduce matrix)
bash bench/device_tests.sh > /tmp/ctest_all.txt 2>&1
mkdir -p $OUT; cp /tmp/ctest_all.txt $OUT/
grep -E "tests passed|FAILED|Failed|\(Failed\)|Total Test" /tmp/ctest_all.txt | head -20
grep -A12 "timeout.ready" $OUT/ctest_gpu.log | grep -E "elapsed|PASS|FAIL" | head
