package cgroupwatch

import (
	"errors"
	"fmt"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
)

// root is a watched YARN root directory. One directory may serve several
// controllers: distributions co-mount cpu,cpuacct (cpu and cpuacct are
// symlinks to it), and on cgroup v2 one directory serves them all.
type root struct {
	// key is the eBPF parent (hierarchy id, kernfs id) or, with inotify,
	// the watch descriptor in ID.
	key ParentKey
	// ino is the directory's inode when it was watched: a YARN root removed
	// and made again is a new directory, to be watched anew.
	ino uint64
	dir string
	// ctrls are the controllers mounted there, in Controller order.
	ctrls []cgroups.Controller
}

// poll forgets YARN roots that were removed or replaced, watches those that
// exist and are not watched, and reads the kernel's drop counter. An error
// means the source cannot watch.
func (w *Watcher) poll() error {
	w.checkRoots()
	if err := w.watchRoots(); err != nil {
		return err
	}
	w.checkLost()
	return nil
}

// checkRoots forgets every watched root whose directory is gone or is
// another directory now (removed and made again), so that watchRoots
// watches it anew. The directories are looked at without the lock.
func (w *Watcher) checkRoots() {
	w.mu.Lock()
	watched := make([]*root, 0, len(w.roots))
	for _, r := range w.roots {
		watched = append(watched, r)
	}
	w.mu.Unlock()
	var stale []*root
	for _, r := range watched {
		var st syscall.Stat_t
		err := syscall.Stat(w.h.RootDir(r.ctrls[0]), &st)
		if err == nil && st.Ino == r.ino {
			continue
		}
		stale = append(stale, r)
	}
	if len(stale) == 0 {
		return
	}
	w.mu.Lock()
	var gone []*root
	for _, r := range stale {
		if w.roots[r.key] == r { // else the inotify reader forgot it meanwhile
			w.forgetLocked(r)
			gone = append(gone, r)
		}
	}
	e, in := w.ebpf, w.inotify
	w.mu.Unlock()
	for _, r := range gone {
		unwatch(e, in, r)
		klog.Infof("yarn: YARN root %s was removed or made again; watching it again once it exists", r.dir)
	}
	if len(gone) > 0 {
		w.requestResync()
	}
}

// forgetLocked drops r from the watched roots; w.mu is held.
func (w *Watcher) forgetLocked(r *root) {
	delete(w.roots, r.key)
	for _, c := range r.ctrls {
		if w.byCtrl[c] == r {
			delete(w.byCtrl, c)
		}
	}
}

// unwatch removes r's watch from the source that had it: its events are
// no longer looked up once r is forgotten, so this needs no lock.
func unwatch(e ebpfSource, in inotifySource, r *root) {
	if e != nil {
		if err := e.RemoveParent(r.key); err != nil {
			klog.V(2).Infof("yarn: %v", err)
		}
	}
	if in != nil {
		_ = in.RemoveWatch(int(r.key.ID)) // the kernel removed it already when the directory went away
	}
}

// rootDir is a YARN root directory found on disk, not watched yet.
type rootDir struct {
	ctrl cgroups.Controller
	dir  string
	ino  uint64
	// hid is its hierarchy id (eBPF only); err says why it is unknown.
	hid uint32
	err error
}

// watchRoots starts watching the YARN root of every controller where it
// exists and is not watched yet; controllers mounted at one directory
// share its watch. A new watch asks for a resync: containers made before
// it was in place were not seen. The directories and hierarchy ids are
// read without the lock; the watches are installed under it, so that the
// readers look up no event of a new root before it is recorded.
func (w *Watcher) watchRoots() error {
	w.mu.Lock()
	e, in := w.ebpf, w.inotify
	var missing []cgroups.Controller
	for _, ctrl := range w.controllers() {
		if w.byCtrl[ctrl] == nil {
			missing = append(missing, ctrl)
		}
	}
	w.mu.Unlock()

	var found []rootDir
	for _, ctrl := range missing {
		d := rootDir{ctrl: ctrl, dir: w.h.RootDir(ctrl)}
		var st syscall.Stat_t
		if err := syscall.Stat(d.dir, &st); err != nil {
			continue
		}
		d.ino = st.Ino
		if e != nil {
			d.hid, d.err = hierarchyID(w.h, ctrl)
			if d.err != nil && w.hidSaid.First(ctrl.String()) {
				klog.Warningf("yarn: cannot watch %s by eBPF: %v", d.dir, d.err)
			}
		}
		found = append(found, d)
	}

	w.mu.Lock()
	var added []string
	var fatal error
	for _, d := range found {
		var key ParentKey
		switch {
		case e != nil:
			if d.err != nil {
				fatal = errors.Join(fatal, d.err)
				continue
			}
			key = ParentKey{HierarchyID: d.hid, ID: d.ino}
			if w.roots[key] == nil {
				if err := e.AddParent(key); err != nil {
					fatal = errors.Join(fatal, err)
					continue
				}
			}
		case in != nil:
			wd, err := in.AddWatch(d.dir)
			if err != nil {
				if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
					continue // removed meanwhile
				}
				fatal = errors.Join(fatal, fmt.Errorf("inotify watch %s: %w", d.dir, err))
				continue
			}
			key = ParentKey{ID: uint64(wd)}
		default:
			continue
		}
		r := w.roots[key]
		if r == nil {
			r = &root{key: key, ino: d.ino, dir: d.dir}
			w.roots[key] = r
			added = append(added, d.dir)
		}
		r.ctrls = append(r.ctrls, d.ctrl)
		w.byCtrl[d.ctrl] = r
		klog.V(2).Infof("yarn: watching %s for %s container cgroups", d.dir, d.ctrl)
	}
	w.mu.Unlock()
	if len(added) > 0 {
		w.requestResync()
	}
	return fatal
}

// rootOf returns the controllers served by the watched root key.
func (w *Watcher) rootOf(key ParentKey) ([]cgroups.Controller, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.roots[key]
	if !ok {
		return nil, false
	}
	return r.ctrls, true
}
