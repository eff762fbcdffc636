-- expect: consumers = 3: three consumer warpgroups are family gemm's (192-row tiles); this family takes 1 or 2
return { family = "ag_gemm", consumers = 3 }
