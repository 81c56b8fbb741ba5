package cgroupwatch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/cgroups"
	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

type failure struct {
	gen int
	src Source
	err error
}

// candidates lists the sources to try, best first.
func (w *Watcher) candidates() []Source {
	switch w.opts.Force {
	case "":
		return []Source{SourceEBPF, SourceInotify}
	case SourceEBPF, SourceInotify:
		return []Source{w.opts.Force}
	}
	return nil
}

// parenthesized returns " (a; b)", or "" for no reasons.
func parenthesized(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

func (w *Watcher) currentGen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// startFirst starts the first of srcs that opens; polling when none does.
// why says why the better ones did not.
func (w *Watcher) startFirst(srcs []Source, stopCh <-chan struct{}) (Source, []string) {
	var why []string
	for _, s := range srcs {
		err := w.start(s, stopCh)
		if err == nil {
			return s, why
		}
		why = append(why, err.Error())
	}
	if w.opts.Force == SourcePolling {
		why = append(why, "forced")
	}
	w.activate(SourcePolling)
	return SourcePolling, why
}

// activate records s as the source running now.
func (w *Watcher) activate(s Source) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active = s
	w.metrics.setSource(s)
}

// start opens source s, watches the YARN roots that exist and starts its
// reader. s is Active once its roots are watched.
func (w *Watcher) start(s Source, stopCh <-chan struct{}) error {
	var (
		e    ebpfSource
		in   inotifySource
		err  error
		what string
	)
	switch s {
	case SourceEBPF:
		if !features.Enabled(features.YARNEBPFDiscovery) {
			return fmt.Errorf("eBPF off by feature gate %s", features.YARNEBPFDiscovery)
		}
		what = "eBPF"
		e, err = w.opts.openEBPF(w.opts.ringSize)
	case SourceInotify:
		what = "inotify"
		in, err = w.opts.openInotify()
	default:
		return fmt.Errorf("no source %q", s)
	}
	if err != nil {
		return fmt.Errorf("%s unavailable: %w", what, err)
	}
	gen := w.install(e, in)
	if err := w.watchRoots(); err != nil {
		w.closeSource()
		return fmt.Errorf("%s unavailable: %w", what, err)
	}
	w.activate(s)
	if e != nil {
		go w.readEBPF(e, gen, stopCh)
	} else {
		go w.readInotify(in, gen, stopCh)
	}
	return nil
}

// install makes e or in the running source, with no root watched yet.
func (w *Watcher) install(e ebpfSource, in inotifySource) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.ebpf, w.inotify = e, in
	w.startedAt = w.opts.Now()
	w.lostSeen = 0
	w.drainResync.Store(false)
	return w.gen
}

// closeSource stops the running source; its reader ends quietly.
func (w *Watcher) closeSource() {
	w.mu.Lock()
	w.gen++
	e, in := w.ebpf, w.inotify
	w.ebpf, w.inotify = nil, nil
	clear(w.roots)
	clear(w.byCtrl)
	w.mu.Unlock()
	if e != nil {
		e.Close()
	}
	if in != nil {
		_ = in.Close()
	}
}

// nextSources decides which sources to try after failed stopped, having
// run for up: failed itself and those after it in cands when it ran at
// least restartAfter (restart), else only those after it; all of cands
// when failed is none of them. An empty next means polling.
func nextSources(cands []Source, failed Source, up, restartAfter time.Duration) (next []Source, restart bool) {
	restart = up >= restartAfter
	i := slices.Index(cands, failed)
	switch {
	case i < 0:
		return cands, restart
	case restart:
		return cands[i:], restart
	default:
		return cands[i+1:], restart
	}
}

// replace answers a failed source: it closes it and starts what
// nextSources chose (polling at the end), logs one line saying so and asks
// for a resync. It returns false when no event source runs any more.
func (w *Watcher) replace(f failure, stopCh <-chan struct{}) bool {
	w.mu.Lock()
	if f.gen != w.gen {
		w.mu.Unlock()
		return true // an earlier source's failure
	}
	up := w.opts.Now().Sub(w.startedAt)
	w.mu.Unlock()
	w.closeSource()

	next, restart := nextSources(w.candidates(), f.src, up, w.opts.restartAfter)
	s, why := w.startFirst(next, stopCh)
	if !restart {
		why = append([]string{fmt.Sprintf("not restarted: it had run %v, less than %v", up.Round(time.Millisecond), w.opts.restartAfter)}, why...)
	}
	whyText := parenthesized(why)
	switch s {
	case f.src:
		klog.Warningf("yarn: container discovery by %s failed after %v: %v; restarted it, resync requested", f.src, up.Round(time.Millisecond), f.err)
	case SourcePolling:
		klog.Warningf("yarn: container discovery by %s failed after %v: %v; falling back to polling every %v%s, resync requested",
			f.src, up.Round(time.Millisecond), f.err, w.opts.ResyncInterval, whyText)
	default:
		klog.Warningf("yarn: container discovery by %s failed after %v: %v; fell back to %s%s, resync requested",
			f.src, up.Round(time.Millisecond), f.err, s, whyText)
	}
	w.requestResync()
	return s != SourcePolling
}

// fail reports a reader's error to the run loop, unless the watcher closed
// that source itself.
func (w *Watcher) fail(gen int, src Source, err error, stopCh <-chan struct{}) {
	w.mu.Lock()
	current := gen == w.gen
	w.mu.Unlock()
	if !current {
		return
	}
	select {
	case w.failed <- failure{gen: gen, src: src, err: err}:
	case <-stopCh:
	}
}

// onCgroupFS checks that the hierarchy's mounts are cgroup filesystems: the
// kernel's cgroup tracepoints never fire for directories of another
// filesystem (a fake root), where inotify sees them.
func onCgroupFS(h cgroups.Hierarchy) error {
	mounts := []string{h.CgroupRoot}
	if !h.V2 {
		mounts = []string{filepath.Join(h.CgroupRoot, cgroups.CPU.String())}
	}
	for _, m := range mounts {
		var st unix.Statfs_t
		if err := unix.Statfs(m, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", m, err)
		}
		if st.Type != unix.CGROUP_SUPER_MAGIC && st.Type != unix.CGROUP2_SUPER_MAGIC {
			return fmt.Errorf("%s is not a cgroup filesystem: no cgroup tracepoint fires for it", m)
		}
	}
	return nil
}
