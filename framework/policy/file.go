package policy

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// reloadDebounce gathers the burst of events one update makes (a mounted
// ConfigMap is swapped by renaming a ..data symlink; an editor writes,
// renames and chmods) into one reload.
const reloadDebounce = 100 * time.Millisecond

// Holder holds the policy loaded from a file and reloads it when the file
// changes. A file that cannot be read or parsed is rejected with an error
// naming the problem, and the policy loaded before is kept (none at
// start). It is safe for concurrent use.
type Holder struct {
	path string
	cur  atomic.Pointer[Policy]

	mu       sync.Mutex
	lastErr  error
	loadedAt time.Time
	// data is the content of the policy in use, to skip no-op reloads.
	data     []byte
	onChange []func()
	// Reloads counts reload outcomes ("loaded", "rejected", "unchanged").
	reloads func(result string)
}

// NewHolder loads path once; the error says why the file was rejected
// (the holder is usable and holds no policy then).
func NewHolder(path string, reloads func(result string)) (*Holder, error) {
	if reloads == nil {
		reloads = func(string) {}
	}
	h := &Holder{path: path, reloads: reloads}
	return h, h.Reload()
}

// Policy returns the policy in use (nil: none).
func (h *Holder) Policy() *Policy {
	if h == nil {
		return nil
	}
	return h.cur.Load()
}

// Status is what /yarn/containers shows of the policy.
type Status struct {
	File      string    `json:"file"`
	Rules     int       `json:"rules"`
	LoadedAt  time.Time `json:"loadedAt,omitzero"`
	LastError string    `json:"lastError,omitempty"`
}

// Status returns the file, the rules in use, when they were loaded and the
// last rejection (cleared by a good load).
func (h *Holder) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Status{File: h.path, LoadedAt: h.loadedAt}
	if p := h.cur.Load(); p != nil {
		st.Rules = len(p.Rules)
	}
	if h.lastErr != nil {
		st.LastError = h.lastErr.Error()
	}
	return st
}

// OnChange registers f to run after each reload that changed the policy.
func (h *Holder) OnChange(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onChange = append(h.onChange, f)
}

// Reload reads and parses the file now. On error the policy in use stays.
func (h *Holder) Reload() error {
	data, err := readCapped(h.path)
	var p *Policy
	if err == nil {
		p, err = Parse(data)
	}
	h.mu.Lock()
	if err != nil {
		err = fmt.Errorf("YARN QoS policy %s rejected, the previous policy stays: %w", h.path, err)
		h.lastErr = err
		h.mu.Unlock()
		h.reloads("rejected")
		return err
	}
	h.lastErr = nil
	if h.cur.Load() != nil && string(data) == string(h.data) {
		h.mu.Unlock()
		h.reloads("unchanged")
		return nil
	}
	h.data = data
	h.cur.Store(p)
	h.loadedAt = time.Now()
	hooks := append([]func(){}, h.onChange...)
	h.mu.Unlock()
	h.reloads("loaded")
	klog.Infof("yarn: YARN QoS policy %s loaded: %d rules, %d tiers", h.path, len(p.Rules), len(p.Tiers))
	for _, f := range hooks {
		f()
	}
	return nil
}

// ParseFile reads and validates the policy file at path as koordlet would
// load it (at most MaxFileBytes), for an offline check.
func ParseFile(path string) (*Policy, error) {
	data, err := readCapped(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxFileBytes)
	}
	return data, nil
}

// Watch reloads the file whenever its directory changes (writes, renames,
// a ConfigMap's symlink swap), debounced, until ctx ends. Without inotify
// it falls back to re-reading every poll interval.
func (h *Holder) Watch(ctx context.Context, poll time.Duration) {
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(filepath.Dir(h.path))
	}
	if err != nil {
		klog.Warningf("yarn: YARN QoS policy %s is re-read every %v (no file watch: %v)", h.path, poll, err)
		if w != nil {
			_ = w.Close()
		}
		h.poll(ctx, poll)
		return
	}
	defer w.Close()
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) != filepath.Base(h.path) && !isConfigMapSwap(ev.Name) {
				continue
			}
			fire = time.After(reloadDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			klog.Warningf("yarn: watching the YARN QoS policy %s: %v", h.path, err)
			fire = time.After(reloadDebounce)
		case <-fire:
			fire = nil
			if err := h.Reload(); err != nil {
				klog.Error(err)
			}
		}
	}
}

// isConfigMapSwap recognises the kubelet's atomic update of a mounted
// ConfigMap: the ..data symlink is replaced.
func isConfigMapSwap(name string) bool { return filepath.Base(name) == "..data" }

func (h *Holder) poll(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := h.Reload(); err != nil {
				klog.Error(err)
			}
		}
	}
}
