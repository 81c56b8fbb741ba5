package cgroupwatch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// observe turns a cgroup event into store events for canonical container
// names: one per controller mounted at the root (all at once on cgroup v2,
// with the controllers the YARN root enables for its containers).
func (w *Watcher) observe(t store.CgroupEventType, key ParentKey, name string, pid int) {
	if !yarn.IsCanonical(name) {
		return
	}
	ctrls, ok := w.rootOf(key)
	if !ok {
		return
	}
	id, _ := yarn.ParseContainerID(name)
	ev := store.CgroupEvent{Type: t, Name: name, ID: id, Dir: w.h.ContainerRelDir(name), Pid: pid}
	now := w.opts.Now()
	if w.h.V2 {
		ev.Controller = store.AllControllers
		if t != store.CgroupRemoved {
			// Which controllers YARN enabled for its containers: one small
			// read of the YARN root's cgroup.subtree_control per event.
			v2, _ := w.h.ReadV2Controllers()
			ev.V2 = &v2
		}
		w.opts.Store.Observe(ev, now)
		return
	}
	for _, c := range ctrls {
		ev.Controller = c
		w.opts.Store.Observe(ev, now)
	}
}

func (w *Watcher) readEBPF(e ebpfSource, gen int, stopCh <-chan struct{}) {
	decodeErrors := 0
	for {
		if w.opts.beforeRead != nil {
			w.opts.beforeRead(SourceEBPF)
		}
		ev, err := e.Read()
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				w.fail(gen, SourceEBPF, err, stopCh)
				return
			}
			w.wakeups.Add(1)
			decodeErrors++
			if decodeErrors == maxDecodeErrors {
				w.fail(gen, SourceEBPF, fmt.Errorf("%d records in a row did not decode, the last: %w", decodeErrors, err), stopCh)
				return
			}
			w.metrics.addLost(SourceEBPF, 1)
			w.lossLog.logf(w.opts.Now(), "yarn: eBPF discovery dropped a record: %v; resync requested", err)
			w.requestResync()
			continue
		}
		decodeErrors = 0
		w.wakeups.Add(1)
		switch ev.Type {
		case Mkdir:
			w.observe(store.CgroupCreated, ev.Parent, ev.Name, 0)
		case Attach:
			w.observe(store.CgroupAttached, ev.Parent, ev.Name, ev.Pid)
		case Rmdir:
			w.observe(store.CgroupRemoved, ev.Parent, ev.Name, 0)
		}
		w.resyncIfDrained(e)
	}
}

// firstPids polls a new container's cgroup.procs briefly (inotify reports
// the mkdir only) so that its first processes reach the store quickly.
func (w *Watcher) firstPids(key ParentKey, name string, stopCh <-chan struct{}) {
	ctrls, ok := w.rootOf(key)
	if !ok || !yarn.IsCanonical(name) {
		return
	}
	procs := filepath.Join(w.h.AbsDir(ctrls[0], w.h.ContainerRelDir(name)), "cgroup.procs")
	for i := 0; i < 200; i++ {
		b, err := os.ReadFile(procs)
		if err != nil {
			return // gone
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			for _, s := range f {
				if pid, err := strconv.Atoi(s); err == nil {
					w.observe(store.CgroupAttached, key, name, pid)
				}
			}
			return
		}
		select {
		case <-stopCh:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
