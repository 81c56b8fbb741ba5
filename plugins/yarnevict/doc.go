// Package yarnevict holds koordlet's eviction strategies made YARN-aware:
// the BE memory and BE CPU evict strategies, the allocatable triggers that
// count YARN's allocation, and upstream's usage triggers, which share
// koordlet's "memoryEvict" and "CPUEvict" slots (Slot). Each lists its
// victims from BE pods and YARN containers (candidates), ranks and plans
// them in pure code (Rank, Plan, PlanAllocatable), and carries the plan
// out (execute): pods through koordlet's executor, YARN containers through
// the killer of package kill. The guard keeps koordlet's pod eviction away
// from the NodeManager pod. The memory relief's rungs (package relief) run
// inside the memory strategy, and victims' growth comes from package
// growth.
package yarnevict
