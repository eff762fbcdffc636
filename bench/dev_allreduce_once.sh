bash bench/device_tests.sh -L mps > /tmp/mps_ctest.txt 2>&1
mkdir -p $OUT; cp /tmp/mps_ctest.txt $OUT/
tail -15 /tmp/mps_ctest.txt
bash bench/allreduce.sh 2>&1 | tail -60
