-- expect: tile.n = 168: family gemm with b_layout = "col" takes n = 16, 32, ..., 256 (a multiple of 16
-- m64n168k16 exists, but a cluster of two along M loads half of B's box each: whole 8-row groups.
return { family = "gemm", b_layout = "col", tile = { m = 128, n = 168, k = 64 } }
