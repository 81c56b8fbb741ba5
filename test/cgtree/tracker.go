package cgtree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Tracker records the cgroup directories a harness created in this run, so
// that its clean-up removes those and nothing else: a directory that existed
// before the harness started (a real kubelet's kubepods, a real YARN
// hierarchy, another test's tree) is never removed and the processes in it
// are never signalled. The zero value is ready to use.
type Tracker struct {
	mu      sync.Mutex
	created []string
}

// MkdirAll creates dir and any missing parent, recording every level it
// created. Levels that existed are left as they were and not recorded.
func (t *Tracker) MkdirAll(dir string) error {
	dir = filepath.Clean(dir)
	var missing []string
	for cur := dir; ; cur = filepath.Dir(cur) {
		if _, err := os.Lstat(cur); err == nil {
			break
		} else if !os.IsNotExist(err) {
			return fmt.Errorf("stat %s: %w", cur, err)
		}
		missing = append(missing, cur)
		if parent := filepath.Dir(cur); parent == cur {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := t.Mkdir(missing[i]); err != nil {
			return err
		}
	}
	return nil
}

// Mkdir creates exactly dir and records it. A dir that already exists is an
// error wrapping os.ErrExist: it is not ours.
func (t *Tracker) Mkdir(dir string) error {
	dir = filepath.Clean(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	t.mu.Lock()
	t.created = append(t.created, dir)
	t.mu.Unlock()
	return nil
}

// Created lists the recorded directories, in creation order.
func (t *Tracker) Created() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.created...)
}

// Owns reports whether dir is a recorded directory or lies below one.
func (t *Tracker) Owns(dir string) bool {
	dir = filepath.Clean(dir)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.created {
		if dir == c || strings.HasPrefix(dir, c+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// RemoveAll removes every recorded directory with its descendants (which
// only the harness's own processes can have made below a directory it
// created), deepest first, killing the processes still inside. Recorded
// directories already gone are skipped. The record is cleared of what was
// removed.
func (t *Tracker) RemoveAll() error {
	t.mu.Lock()
	dirs := append([]string(nil), t.created...)
	t.mu.Unlock()
	// Deepest first; a recorded dir below another is removed with it.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	var errs []error
	var left []string
	for _, d := range dirs {
		if err := Remove(d); err != nil {
			errs = append(errs, err)
			left = append(left, d)
		}
	}
	t.mu.Lock()
	t.created = left
	t.mu.Unlock()
	return errors.Join(errs...)
}
