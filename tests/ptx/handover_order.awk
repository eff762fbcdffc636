# Prints how many relaxed cluster arrives in a PTX file are not a hand-over's release: each must
# follow, in the text, a named barrier (bar.sync: every consumer's accesses are done) and then a
# fence.acq_rel.cluster (the release that the relaxed arrive needs), with no shared or global
# data access and no wait between the barrier and the arrive.  (gemm_splitk.cuh, scatter)
/bar\.sync|barrier\.sync/ { s = 1; next }
/fence\.acq_rel\.cluster/ { s = s >= 1 ? 2 : 0; next }
/mbarrier\.arrive\.relaxed\.cluster/ { if (s != 2) bad++; next }
/(ld|st)\.(shared|global)|mbarrier\.try_wait/ { s = 0 }
END { print bad + 0 }
