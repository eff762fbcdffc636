# Prints, for each k-block of WGMMAs in a PTX file (from wgmma.fence to wgmma.commit_group), how
# many shared-memory descriptors it builds from an address (the start address masked to its 18
# bits, `and.b32 ..., 262128`) and how many WGMMAs it issues: "builds/wgmmas" per k-block, one per
# line.  weft/gemm_mainloop.cuh builds two (A's and B's first) and adds the rest.
/wgmma\.fence\.sync\.aligned/ { on = 1; b = 0; w = 0; next }
on && /, 262128;/ { b++ }
on && /wgmma\.mma_async/ { w++ }
on && /wgmma\.commit_group/ { print b "/" w; on = 0 }
