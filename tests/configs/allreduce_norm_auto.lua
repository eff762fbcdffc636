-- tests/configs/allreduce_norm_auto.lua: the allreduce_norm config with every open field left to `--auto` (the
-- family's rule, or a tuning database's rows): what the torch op and `weft run --auto` get.
--   PHASES=time AUTO=1 bash bench/allreduce_norm.sh
return { family = "allreduce_norm", dtype = "bf16", eps = 1e-6 }
