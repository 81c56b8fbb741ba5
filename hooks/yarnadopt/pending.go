package yarnadopt

// RestorePending counts the container cgroups koordlet made (marked Marker) that
// are still there: with the gate off, the containers still running in them
// (they stay until they end; each cgroup goes once empty). For
// koordlet_yarn_restore_pending and /yarn/restore; -1 while the hierarchy
// is not known.
func (a *Adopter) RestorePending() int {
	if a.opts.Hierarchy == nil {
		return -1
	}
	h, ok := a.opts.Hierarchy()
	if !ok {
		return -1
	}
	return len(ourLeaves(h))
}
