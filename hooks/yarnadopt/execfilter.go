package yarnadopt

import (
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// execSource is the exec watch (ExecWatch, or a test's).
type execSource interface {
	Watch(CgroupKey) error
	Unwatch(CgroupKey) error
	Read() (ExecEvent, error)
	Lost() (uint64, error)
	Close()
}

// setWatched makes the exec watch's filter keys.
func (a *Adopter) setWatched(keys map[CgroupKey]bool) {
	if a.exec == nil {
		return
	}
	for k := range a.watched {
		if !keys[k] {
			if err := a.exec.Unwatch(k); err == nil {
				delete(a.watched, k)
			}
		}
	}
	for k := range keys {
		if !a.watched[k] {
			if err := a.exec.Watch(k); err != nil {
				klog.V(2).Infof("yarn: %v", err)
				continue
			}
			a.watched[k] = true
		}
	}
}

// filterExec points the exec watch's filter at the NM pod's cgroups
// (relative dirs).
func (a *Adopter) filterExec(h cgroups.Hierarchy, dirs []string) {
	if a.exec != nil {
		hid, err := cgroups.HierarchyID(h, scanCtrl)
		if err != nil {
			a.said.Do("hid", func() {
				klog.Warningf("yarn: YARNContainerCgroups: exec watch: %v; the scan alone finds container processes", err)
			})
			a.setWatched(nil)
		} else {
			keys := map[CgroupKey]bool{}
			for _, d := range dirs {
				var st unix.Stat_t
				if unix.Stat(h.AbsDir(scanCtrl, d), &st) == nil {
					keys[CgroupKey{HierarchyID: hid, ID: st.Ino}] = true
				}
			}
			a.setWatched(keys)
		}
	}
}
