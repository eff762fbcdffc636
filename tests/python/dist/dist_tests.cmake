# tests/python/dist: weft.torch's comm ops under torchrun (N ranks sharing the GPU under MPS: the
# MPS daemon is the caller's, see run.sh).  Label mps; SKIP (77) without torch, a GPU or torchrun.
# Included at the end of tests/python/CMakeLists.txt, whose weft_py_env says where the package is.
foreach(np 1 2 4 8)
  add_test(NAME python.dist.np${np} COMMAND ${CMAKE_CURRENT_LIST_DIR}/run.sh ${np})
  set_tests_properties(python.dist.np${np} PROPERTIES LABELS "gpu;mps" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
    RESOURCE_LOCK mps TIMEOUT 1200
    ENVIRONMENT "${weft_py_env};PYTHONDONTWRITEBYTECODE=1;WEFT_CACHE_DIR=${PROJECT_BINARY_DIR}/testtmp/mps-cache")
endforeach()
